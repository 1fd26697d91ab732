"""Workers on machines reached over SSH: what `sky.SSH` and the cloud providers share.

`RemoteNodes` owns, per node, one SSH connection (host key verified: against known_hosts, or the
key pinned in `Instance.host_key`), the node folder `~/.skyward/pools/<pool>/node-<i>`, the
bootstrap run there, and the workers started there. A provider with machines calls:

- `open(node, login)` to log in (retried with backoff until `Options.ssh_timeout`), learning the
  login's home folder, CPUs and memory;
- `start_worker(cluster, instance, setup)` from `Provider.connect`: bootstraps the node once
  (again only if its folder is gone; a connection lost meanwhile is reopened and the bootstrap
  resumed, see `prepare_node`), kills any worker an earlier connection left, and starts the
  worker on an exec channel;
- `clean(cluster, instance)` from `Provider.terminate`: lets the node's guardian go, kills every
  worker it started there (the whole process group), runs the node's exit scripts (its volumes'
  unmount) and removes the node folder;
- `close()` from `Provider.teardown`.

Each node folder has a guardian (`skyward.guardian`), started first in the bootstrap's script (its
source in the script, no request of its own: `guardian.script_start`), and again after it when it
did not answer as running (the venv's Python when the machine had none), and a renewal of its
lease kept open on the node's current connection (reopened with it), opened on that answer. The
guardian ends the pool's work there, and runs `NodeSetup.end_command`, when the client has been
gone for `Spec.ttl` seconds.

`python_bin()` is relative to the node folder, where every worker starts: the same path on every
machine, whatever its home folder, as `Provider.python_bin(cluster)` must be.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import posixpath
import secrets
import shlex
import time
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.options import Options

if TYPE_CHECKING:
    from skyward.providers.base import Cluster, Instance, NodeSetup
    from skyward.transport.ssh import SSHChannel
    from skyward.transport.ssh_connect import Connection
    from skyward.transport.ssh_lease import LeaseRenewal

#: `Options.ssh_timeout` / `ssh_retry_interval` when left at None.
DEFAULT_SSH_TIMEOUT = 60.0
DEFAULT_RETRY_INTERVAL = 1.0
#: A login that is not a reconnect (the first one, a cleanup) is not retried for longer than this.
FIRST_LOGIN_TIMEOUT = 20.0
#: Where a host keeps the environments images built (`bootstrap.environments`), under its home.
ENVIRONMENTS = ".skyward/envs"
#: How long a node's exit scripts may run when it is cleaned (uploading a read-write volume's copy).
EXIT_SCRIPTS_TIMEOUT = 600.0


@attrs.frozen
class Login:
    """How to reach one machine: address, port, user and, for clouds, the pinned host key."""

    host: str
    port: int = 22
    user: str = ""
    host_key: str = ""

    @classmethod
    def of(cls, instance: Instance) -> Login:
        return cls(instance.public_ip, instance.ssh_port, instance.ssh_user, instance.host_key)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{self.port}" if self.user else f"{host}:{self.port}"


class RemoteNodes:
    def __init__(
        self,
        *,
        key_file: str | None = None,
        known_hosts: str | None = None,
        python: str | None = None,
        options: Options | None = None,
    ) -> None:
        self.key_file = key_file
        self.known_hosts = known_hosts
        self.python = python
        #: The pool's `sky.Options` (the provider passes its own on).
        self.options = options if options is not None else Options()
        #: How long the first login to a node may keep being refused: a cloud machine that just got
        #: an address is still booting, and its sshd may take minutes (clouds set it; None means
        #: `ssh_timeout`, right for machines that are already up).
        self.first_login_timeout: float | None = None
        self._logins: dict[int, Login] = {}
        self._conns: dict[int, Connection] = {}
        self._homes: dict[int, str] = {}
        self._facts: dict[int, tuple[int, float]] = {}
        self._scripts: dict[int, Any] = {}
        self._node_locks: dict[int, asyncio.Lock] = {}
        #: The pid files of the workers started on each node, by (node, worker on the node).
        self._pid_files: dict[tuple[int, int], list[str]] = {}
        #: Per node: its guardian's folder and the interpreters that may run it, and the renewal.
        self._guards: dict[int, tuple[str, tuple[str, ...], float]] = {}
        self._renewals: dict[int, LeaseRenewal] = {}
        #: Per node: the connection the guardian answered on in the bootstrap's output, and the
        #: opening of its renewal there.
        self._renewing: dict[int, tuple[Any, asyncio.Future[None]]] = {}
        self._launches = 0
        #: This client's mark in the names of what it starts on a node: an adopting client (a
        #: server started again) counts its launches from one too, and a folder still holding a
        #: killed client's `worker-1.pid`, or the status its bootstrap left, must not pass for its own.
        self._run = secrets.token_hex(4)
        self._log = structlog.get_logger()

    # -- settings ----------------------------------------------------------------------------------

    @property
    def ssh_timeout(self) -> float:
        value = self.options.ssh_timeout
        return float(value) if value is not None else DEFAULT_SSH_TIMEOUT

    @property
    def retry_interval(self) -> float:
        value = self.options.ssh_retry_interval
        return float(value) if value is not None else DEFAULT_RETRY_INTERVAL

    # -- logging in --------------------------------------------------------------------------------

    async def open(self, node: int, login: Login, timeout: float | None = None) -> Connection:
        """Log in to `node`'s machine (retrying until `timeout`, default `ssh_timeout`)."""
        from skyward.transport.ssh_connect import connect_with_retry

        self._logins[node] = login

        def on_retry(exc: BaseException, wait: float) -> None:
            self._log.info(
                "skyward.ssh_retry", node=node, host=str(login), error=str(exc), wait=round(wait, 2)
            )

        conn = await connect_with_retry(
            login.host, login.port, login.user or None,
            deadline=time.monotonic() + (self.ssh_timeout if timeout is None else timeout),
            interval=self.retry_interval, on_retry=on_retry, key_file=self.key_file,
            known_hosts=self.known_hosts, host_key=login.host_key or None,
        )
        old = self._conns.get(node)
        if old is not None and old is not conn:
            old.close()
        self._conns[node] = conn
        if node not in self._homes:
            await self._probe(node, conn)
        if node in self._guards:  # a reconnect: the lease is renewed on the new connection at once
            await self._renew(node, conn)
        return conn

    async def _probe(self, node: int, conn: Connection) -> None:
        """The login's home folder (every remote path is absolute), CPUs and memory."""
        result = await conn.run(
            'printf "%s\\n" "$HOME"; getconf _NPROCESSORS_ONLN 2>/dev/null || echo 0; '
            "awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0",
            check=False,
        )
        lines = str(result.stdout or "").splitlines()
        if not lines or not lines[0].startswith("/"):
            raise ConnectionError(f"SSH host {self._logins[node]} did not report a home folder ($HOME)")
        self._homes[node] = lines[0]
        with contextlib.suppress(ValueError, IndexError):
            self._facts[node] = (int(lines[1]), int(lines[2]) / 1024 / 1024)

    def facts(self, node: int) -> tuple[int, float]:
        """(CPUs, memory in GB) of `node`'s machine, (0, 0.0) when unknown."""
        return self._facts.get(node, (0, 0.0))

    async def connection(self, node: int, instance: Instance) -> Connection:
        """`node`'s live connection (reopened if it dropped), for a provider's own channels on it."""
        return await self._connection(node, instance)

    async def _connection(self, node: int, instance: Instance, timeout: float | None = None) -> Connection:
        conn = self._conns.get(node)
        if conn is not None and not conn.is_closed():
            return conn
        if timeout is None and node not in self._homes and self.first_login_timeout is not None:
            timeout = max(self.first_login_timeout, self.ssh_timeout)
        login = self._logins.get(node) or Login.of(instance)
        return await self.open(node, login, timeout)

    # -- workers -----------------------------------------------------------------------------------

    def workdir(self, cluster: Cluster, node: int) -> str:
        return f"{self._homes[node]}/.skyward/pools/{cluster.id}/node-{node}"

    def python_bin(self) -> str:
        return relative_python(self.python)

    def venv_dir(self) -> str:
        return relative_python(self.python).rsplit("/bin/", 1)[0]

    async def start_worker(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> SSHChannel:
        """Bootstrap `instance` if needed and start its worker; the `Provider.connect` of SSH machines."""
        from skyward.transport.ssh_commands import kill_command

        node = instance.node
        # One node's workers (several with mig) start together: the first bootstraps the node,
        # the others wait for it and reuse its script, instead of running the bootstrap again at
        # the same time in the same folder.
        guarding: asyncio.Future[None] | None = None
        channel: SSHChannel | None = None
        async with self._node_locks.setdefault(node, asyncio.Lock()):
            conn = await self._connection(node, instance)
            workdir = self.workdir(cluster, node)
            stale = self._pid_files.pop((node, setup.worker), [])
            if stale:  # this worker restarts: whatever its predecessor left must be gone first
                await conn.run(kill_command(stale), check=False)
            script = self._scripts.get(node)
            if script is not None and await _exists(conn, f"{workdir}/env.sh"):
                await self._guard(node, conn, cluster, setup, workdir, required=True)
            else:
                script, channel = await self._bootstrap_with_worker(conn, cluster, instance, setup, workdir)
                self._scripts[node] = script
                conn = self._conns[node]  # a new one when the bootstrap had to reconnect
                # With the venv's Python if need be; now a node without a guardian is not used. The
                # worker's channel is open meanwhile: a node whose guardian fails after all has its
                # worker killed.
                guarding = asyncio.ensure_future(self._guard_after(node, conn, cluster, setup, workdir))
        try:
            if channel is None:
                pid_file = self._pid_file(workdir)
                channel = await self._open_worker(conn, instance, script, setup, pid_file, cluster)
        except BaseException:
            if guarding is not None:
                guarding.cancel()
                await asyncio.gather(guarding, return_exceptions=True)
            raise
        from skyward.transport.ssh_link import keeper_pid_file

        # The keeper too: one holding a link the pool gave up on would wait out its grace period.
        pid_file = channel.pid_file
        self._pid_files.setdefault((node, setup.worker), []).extend([pid_file, keeper_pid_file(pid_file)])
        if guarding is not None:
            try:
                await guarding
            except BaseException:
                channel.kill()
                raise
        return channel

    def _pid_file(self, workdir: str) -> str:
        self._launches += 1
        return f"{workdir}/worker-{self._run}-{self._launches}.pid"

    async def _open_worker(
        self, conn: Connection, instance: Instance, script: Any, setup: NodeSetup, pid_file: str,
        cluster: Cluster, after: str = "",
    ) -> SSHChannel:
        from skyward.transport.ssh import SSHChannel

        node = instance.node
        label = f"node {node} ({self._logins.get(node) or Login.of(instance)})"
        workdir = self.workdir(cluster, node)
        command, resume = self._kept(
            node, instance, script, setup, pid_file, workdir, float(cluster.spec.ttl), after
        )
        return await SSHChannel(conn, command, pid_file=pid_file, label=label, resume=resume).open()

    async def _bootstrap_with_worker(
        self, conn: Connection, cluster: Cluster, instance: Instance, setup: NodeSetup, workdir: str
    ) -> tuple[Any, SSHChannel | None]:
        """Bootstrap the node while the worker's start is on its way: the worker's channel opens
        with the bootstrap's, and its command waits on the node for the script's exit status
        (`keeper_command(after=...)`), so the worker starts there as the script ends, with no round
        trip between. The script starts the guardian first (`guardian.script_start`), and its
        answer opens the lease's renewal meanwhile. The channel is None when the bootstrap had to
        reconnect (the worker then starts on the new connection)."""
        from skyward.bootstrap.render import Script

        node = instance.node
        pid_file = self._pid_file(workdir)
        status = posixpath.basename(pid_file).removesuffix(".pid") + ".bootstrap"  # this run's own
        where = Script(text="", python_bin="", venv_dir="", workdir=workdir)  # env.sh and launch line
        early = asyncio.ensure_future(
            self._open_worker(conn, instance, where, setup, pid_file, cluster, after=status)
        )
        try:
            script = await self._bootstrap(conn, cluster, setup, node, workdir, status)
        except BaseException:
            renewing = self._renewing.pop(node, None)
            if renewing is not None:
                renewing[1].cancel()
            await self._drop_early(early, self._conns.get(node), pid_file)
            raise
        if self._conns[node] is not conn:
            await self._drop_early(early, self._conns[node], pid_file)
            return script, None
        return script, await early

    async def _drop_early(self, early: asyncio.Future[SSHChannel], conn: Any, pid_file: str) -> None:
        """The worker's start sent with a bootstrap that failed or moved to a new connection: what
        it started on the node (the shell waiting for the bootstrap, or the keeper) is killed."""
        from skyward.transport.ssh_commands import kill_command
        from skyward.transport.ssh_link import keeper_pid_file, waiting_pid_file

        early.cancel()
        await asyncio.gather(early, return_exceptions=True)
        # Its channel closes with the processes killed here (or died with its connection).
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                command = kill_command([waiting_pid_file(pid_file), pid_file, keeper_pid_file(pid_file)])
                await asyncio.wait_for(conn.run(command, check=False), 30)

    async def _guard_after(
        self, node: int, conn: Connection, cluster: Cluster, setup: NodeSetup, workdir: str
    ) -> None:
        """The required start of the guardian, unless the bootstrap's run on `conn` had it answer
        as running: then its renewal is being opened already (`_guardian_first`), and nothing waits
        for that (a renewal that fails to open is logged; the guardian counts down, and the next
        start or reconnect renews)."""
        renewing = self._renewing.get(node)
        if renewing is not None and renewing[0] is conn:
            return
        await self._guard(node, conn, cluster, setup, workdir, required=True)

    def _guardian_first(self, node: int, cluster: Cluster, setup: NodeSetup, workdir: str) -> Any:
        """The bootstrap's first lines, which start the node's guardian, and what takes its answer:
        a guardian that runs gets its lease renewed on the node's connection at once."""
        from skyward.guardian import initial_lease, script_start

        ttl = float(cluster.spec.ttl)
        pythons = tuple(p for p in (self.python, "python3", self.python_bin()) if p)
        first = script_start(
            workdir, ttl=ttl, initial=initial_lease(setup.bootstrap_timeout, ttl),
            end_command=setup.end_command, pythons=pythons,
        )

        def answered(answer: str) -> None:
            if not answer.startswith(("started", "running")):
                self._log.info("skyward.guardian_not_started", folder=workdir, answer=answer)
                return
            self._log.info("skyward.guardian", folder=workdir, state=answer, ttl=ttl,
                           ends_machine=bool(setup.end_command))
            self._guards[node] = (workdir, pythons, ttl)
            conn = self._conns[node]
            renewal = self._renewals.get(node)
            if renewal is None or renewal.conn is not conn or not renewal.open_now:
                self._renewing[node] = (conn, asyncio.ensure_future(self._renew(node, conn)))

        return first, answered

    def _kept(
        self, node: int, instance: Instance, script: Any, setup: NodeSetup, pid_file: str, workdir: str,
        grace: float, after: str = "",
    ) -> tuple[str, Any]:
        """The worker's start under its keeper, and how its channel comes back after a drop
        (`skyward.transport.ssh_link`): within the pool's lease `ttl`, on a new login."""
        from skyward.transport.ssh_link import Resume, attach_command, keeper_command

        where = {"python": self.python_bin(), "env_file": script.env_file, "pid_file": pid_file}
        where["cwd"] = workdir
        command = keeper_command(script.launch_line(setup.launch), grace=grace, after=after, **where)

        async def reconnect(timeout: float) -> Connection:
            async with self._node_locks.setdefault(node, asyncio.Lock()):
                return await self._connection(node, instance, timeout)

        return command, Resume(reconnect, attach_command(**where), grace)

    async def _guard(
        self, node: int, conn: Connection, cluster: Cluster, setup: NodeSetup, workdir: str,
        sent: asyncio.Future[None] | None = None, *, required: bool = False,
    ) -> None:
        """Start the node's guardian unless it runs, and renew its lease on `conn`.

        `required`: the start that comes before the worker's. A node whose guardian cannot start
        is not used (`GuardianError`): nothing would end its worker, or its machine, if this
        client died, and on a cloud the machine's boot guardian, never renewed, would end the
        machine under a live pool when its first lease lapsed. The start during the bootstrap
        is not required: the machine may have no Python yet, and the start after it retries.
        """
        renewal = self._renewals.get(node)
        if renewal is not None and renewal.conn is conn and renewal.open_now:
            return
        from skyward.guardian import initial_lease
        from skyward.transport.ssh_lease import guard

        ttl = float(cluster.spec.ttl)
        pythons = tuple(p for p in (self.python, "python3", self.python_bin()) if p)
        try:
            renewal = await guard(
                conn, workdir, ttl=ttl, initial=initial_lease(setup.bootstrap_timeout, ttl),
                end_command=setup.end_command, pythons=pythons, sent=sent,
            )
        except Exception as exc:  # noqa: BLE001 - reported; the required start fails the node
            self._log.warning("skyward.guardian_failed", node=node, error=str(exc))
            if required:
                raise _unguarded(node, f"{type(exc).__name__}: {exc}") from exc
            return
        if renewal is not None:
            self._guards[node] = (workdir, pythons, ttl)
            self._set_renewal(node, renewal)
        elif required:
            raise _unguarded(node, "no Python on the machine could run it, even after the bootstrap")

    async def _renew(self, node: int, conn: Connection) -> None:
        from skyward.guardian import renew_command, renew_interval
        from skyward.transport.ssh_lease import LeaseRenewal

        workdir, pythons, ttl = self._guards[node]
        try:
            renewal = await LeaseRenewal(conn, renew_command(workdir, pythons), renew_interval(ttl)).open()
        except Exception as exc:  # noqa: BLE001 - the guardian counts down; the next start renews
            self._log.warning("skyward.guardian_renew_failed", node=node, error=str(exc))
            return
        self._set_renewal(node, renewal)

    def _set_renewal(self, node: int, renewal: LeaseRenewal | None) -> None:
        if renewal is None and (renewing := self._renewing.pop(node, None)) is not None:
            renewing[1].cancel()
        old = self._renewals.pop(node, None)
        if old is not None and old is not renewal:
            old.close()
        if renewal is not None:
            self._renewals[node] = renewal

    def bootstrap_args(self) -> dict[str, Any]:
        """How the bootstrap builds the venv on these machines (`prepare_node`'s and `sky.plan`'s).

        A named interpreter is the machine's own Python: the venv also sees its packages (a CUDA
        build of torch...), and Image.pip installs on top.
        """
        return {"python": self.python, "system_site_packages": self.python is not None}

    async def _bootstrap(
        self, conn: Connection, cluster: Cluster, setup: NodeSetup, node: int, workdir: str, status: str
    ) -> Any:
        from skyward.bootstrap import prepare_node
        from skyward.transport.ssh_commands import SSHRunner, kill_command

        login = self._logins[node]
        pid_file = f"{workdir}/bootstrap.pid"
        first, on_guardian = self._guardian_first(node, cluster, setup, workdir)
        from skyward.bootstrap.phases import STATUS_VARIABLE

        first = f"{STATUS_VARIABLE}={shlex.quote(status)}\n" + first  # where its exit status goes
        # The bootstrap's commands are recorded apart (`starting`) until the guardian's lines are
        # done: a guardian that still holds the folder (a killed client's lease, ending as this
        # start comes) kills the groups the folder's `*.pid` files name, and this start, waiting
        # for that end, is not that client's. Then the record becomes the pool's.
        starting = f"{pid_file}.starting"
        first += f"mv -f {shlex.quote(starting)} {shlex.quote(pid_file)} 2>/dev/null || true\n"

        async def reconnect() -> SSHRunner:
            # The same backoff as a worker's reconnect; then whatever the cut-off bootstrap still
            # runs on the host (its whole process group) goes, before the resumed one starts there.
            new = await self.open(node, login)
            await asyncio.wait_for(new.run(kill_command([starting, pid_file]), check=False), 30)
            self._log.info("skyward.ssh_bootstrap_resumed", node=node, host=str(login))
            return SSHRunner(new, label=str(login), pid_file=starting)

        return await prepare_node(
            SSHRunner(conn, label=str(login), pid_file=starting), setup, node=node, workdir=workdir,
            reconnect=reconnect, environments_root=f"{self._homes[node]}/{ENVIRONMENTS}",
            first=first, on_guardian=on_guardian, **self.bootstrap_args(),
        )

    async def clean(self, cluster: Cluster, instance: Instance) -> None:
        """Kill every worker started on `instance` (process groups) and remove its node folder."""
        node = instance.node
        if node not in self._homes:
            return
        try:
            conn = await self._connection(node, instance, min(self.ssh_timeout, FIRST_LOGIN_TIMEOUT))
        except Exception as exc:  # noqa: BLE001 - reported; the machine is unreachable
            host = str(self._logins.get(node) or Login.of(instance))
            self._log.warning("skyward.ssh_cleanup_failed", node=node, host=host, error=str(exc))
            return
        workdir = self.workdir(cluster, node)
        q = shlex.quote
        pool_dir = posixpath.dirname(workdir)  # ~/.skyward/pools/<pool>, then pools, then ~/.skyward
        pools_dir = posixpath.dirname(pool_dir)
        parents = " ".join(q(p) for p in (pool_dir, pools_dir, posixpath.dirname(pools_dir)))
        from skyward.guardian import release_command
        from skyward.transport.ssh_commands import kill_recorded

        command = release_command(workdir) + "; " + (
            f'for f in {q(workdir)}/worker-*.pid; do {kill_recorded(chr(34) + "$f" + chr(34))}; done; '
        )
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.run(command + "true", check=False), 60)
        if getattr(cluster.spec, "volumes", ()):  # the only exit scripts today: a volume's unmount
            await self._run_exit_scripts(conn, node, workdir)
        with contextlib.suppress(Exception):
            remove = f"rm -rf {q(workdir)}; rmdir {parents} 2>/dev/null; true"
            await asyncio.wait_for(conn.run(remove, check=False), 60)
        self._set_renewal(node, None)
        self._guards.pop(node, None)
        self._scripts.pop(node, None)
        for key in [key for key in self._pid_files if key[0] == node]:
            del self._pid_files[key]

    async def run_exit_scripts(self, cluster: Cluster, instance: Instance) -> None:
        """Run `instance`'s exit scripts on its open connection, before a cloud deletes the machine
        (no new login is tried: a machine that cannot be reached loses nothing more by deletion)."""
        node = instance.node
        conn = self._conns.get(node)
        if node in self._homes and conn is not None and not conn.is_closed():
            await self._run_exit_scripts(conn, node, self.workdir(cluster, node))

    async def _run_exit_scripts(self, conn: Connection, node: int, workdir: str) -> None:
        """The node's exit scripts (a volume's unmount and upload: `skyward.bootstrap.volumes`), once
        its workers are gone and before its folder is; a failure is logged, never raised."""
        from skyward.bootstrap.volumes import exit_command

        try:
            command = exit_command(workdir)
            result = await asyncio.wait_for(conn.run(command, check=False), EXIT_SCRIPTS_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - reported; cleaning goes on
            self._log.warning("skyward.node_exit_failed", node=node, error=str(exc))
            return
        if result.exit_status:
            self._log.warning("skyward.node_exit_failed", node=node, output=str(result.stderr or "")[-2000:])

    def forget(self, node: int) -> None:
        """Drop what is known of `node` (its machine is being deleted): its connection is closed."""
        self._set_renewal(node, None)
        conn = self._conns.pop(node, None)
        if conn is not None:
            conn.close()
        for table in (self._logins, self._homes, self._facts, self._scripts, self._guards):
            table.pop(node, None)
        for key in [key for key in self._pid_files if key[0] == node]:
            del self._pid_files[key]

    async def close(self) -> None:
        for node in list(self._renewals):
            self._set_renewal(node, None)
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            conn.close()
        for conn in conns:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5)


def _unguarded(node: int, why: str) -> Exception:
    from skyward.errors import GuardianError

    return GuardianError(
        f"node {node}: its guardian could not start ({why}); the node is not used, since nothing "
        "would end it if this client died. Check that the machine has python3 and a writable home "
        "folder, then start the pool again."
    )


async def _exists(conn: Connection, path: str) -> bool:
    result = await conn.run(f"test -e {shlex.quote(path)}", check=False)
    return result.exit_status == 0


@functools.lru_cache(maxsize=8)
def relative_python(python: str | None) -> str:
    """Where the bootstrap puts the venv's python, relative to the node folder."""
    from skyward.bootstrap import render_script
    from skyward.image import Image

    script = render_script(Image(), (), workdir="/W", python=python)
    path = posixpath.normpath(script.python_bin)
    return posixpath.relpath(path, "/W") if path.startswith("/W/") else path
