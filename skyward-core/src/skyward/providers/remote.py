"""Workers on machines reached over SSH: what `sky.SSH` and the cloud providers share.

`RemoteNodes` owns, per node, one SSH connection (host key verified: against known_hosts, or the
key pinned in `Instance.host_key`), the node folder `~/.skyward/pools/<pool>/node-<i>`, the
bootstrap run there, and the workers started there. A provider with machines calls:

- `open(node, login)` to log in (retried with backoff until `Options.ssh_timeout`), learning the
  login's home folder, CPUs and memory (from the client's record of the host, else a probe:
  `remote_login`);
- `start_worker(cluster, instance, setup)` from `Provider.connect`: bootstraps the node once
  (again only if its folder is gone; a connection lost meanwhile is reopened and the bootstrap
  resumed, see `prepare_node`), kills any worker an earlier connection left, and starts the
  worker on an exec channel, sent with the bootstrap (`remote_start`);
- `clean(cluster, instance)` from `Provider.terminate`: lets the node's guardian go, kills every
  worker it started there (the whole process group), runs the node's exit scripts (its volumes'
  unmount) and removes the node folder;
- `close()` from `Provider.teardown`.

Each node folder has a guardian (`skyward.guardian`), started first in the bootstrap's script (its
source in the script, no request of its own: `guardian.script_start`), and again after it when it
did not answer as running (the venv's Python when the machine had none), and a renewal of its
lease kept open on the node's current connection (reopened with it), opened on that answer. The
guardian ends the pool's work there, and runs `NodeSetup.end_command`, when the client has been
gone for `Spec.ttl` seconds (`remote_guard`).

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

import structlog

from skyward.options import Options
from skyward.providers.remote_guard import NodeGuards
from skyward.providers.remote_login import (
    DEFAULT_RETRY_INTERVAL,
    DEFAULT_SSH_TIMEOUT,
    ENVIRONMENTS,
    EXIT_SCRIPTS_TIMEOUT,
    FIRST_LOGIN_TIMEOUT,
    PROBE,
    Home,
    HomeRecords,
    Login,
    login_key,
    parse_probe,
)
from skyward.providers.remote_start import WorkerStarts

if TYPE_CHECKING:
    from skyward.providers.base import Cluster, Instance, NodeSetup
    from skyward.transport.ssh import SSHChannel
    from skyward.transport.ssh_connect import Connection
    from skyward.transport.ssh_lease import LeaseRenewal

__all__ = [
    "DEFAULT_RETRY_INTERVAL", "DEFAULT_SSH_TIMEOUT", "ENVIRONMENTS", "EXIT_SCRIPTS_TIMEOUT",
    "FIRST_LOGIN_TIMEOUT", "Login", "RemoteNodes", "relative_python",
]


class RemoteNodes(WorkerStarts, NodeGuards):
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
        self._unconfirmed: set[int] = set()
        #: Where the homes this client learnt are kept between pools (`remote_login`).
        self.records = HomeRecords()
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
        from skyward.fastpaths.asyncssh_preopen import preopen
        from skyward.transport.ssh import WINDOW as LINK_WINDOW
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
        # The start's two requests, or a reconnect's (the attachment and the renewal), find their
        # channels open (`asyncssh_preopen`), by receive window: the worker's link's, the default.
        preopen(conn, (LINK_WINDOW, None))
        old = self._conns.get(node)
        if old is not None and old is not conn:
            old.close()
        self._conns[node] = conn
        if node not in self._homes:
            recorded = self.records.get(login_key(conn))
            if recorded is None:
                await self._probe(node, conn)
            else:  # the first requests check it on the node (`_home_moved`)
                self._learnt(node, recorded)
                self._unconfirmed.add(node)
        if node in self._guards:  # a reconnect: the lease is renewed on the new connection at once
            await self._renew(node, conn)
        return conn

    async def _probe(self, node: int, conn: Connection) -> Home:
        """The login's home folder (every remote path is absolute), CPUs and memory, recorded."""
        result = await conn.run(PROBE, check=False)
        home = parse_probe(str(result.stdout or ""), self._logins[node])
        self._learnt(node, home)
        self._unconfirmed.discard(node)
        self.records.put(login_key(conn), home)
        return home

    def _learnt(self, node: int, home: Home) -> None:
        self._homes[node] = home.folder
        if home.cpus or home.memory_gb:
            self._facts[node] = (home.cpus, home.memory_gb)

    async def _home_moved(self, node: int) -> bool:
        """After a start sent on a recorded home failed: whether the login's home is another one
        (then it is learnt, and the start may go again); False where the record was confirmed."""
        conn = self._conns.get(node)
        if node not in self._unconfirmed or conn is None or conn.is_closed():
            return False
        recorded = self._homes[node]
        with contextlib.suppress(Exception):
            home = await self._probe(node, conn)
            if home.folder != recorded:
                self._log.info("skyward.ssh_home_moved", node=node, recorded=recorded, home=home.folder)
                return True
        return False

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
        """Bootstrap `instance` if needed and start its worker; the `Provider.connect` of SSH machines.
        A start sent on a recorded home that is no longer the login's goes again on the new one."""
        try:
            return await self._start_worker(cluster, instance, setup)
        except Exception:
            if not await self._home_moved(instance.node):
                raise
        return await self._start_worker(cluster, instance, setup)

    async def _start_worker(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> SSHChannel:
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
                self._unconfirmed.discard(node)  # the script ran in the home it was sent for
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

    def bootstrap_args(self) -> dict[str, Any]:
        """How the bootstrap builds the venv on these machines (`prepare_node`'s and `sky.plan`'s).

        A named interpreter is the machine's own Python: the venv also sees its packages (a CUDA
        build of torch...), and Image.pip installs on top.
        """
        return {"python": self.python, "system_site_packages": self.python is not None}

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
        if cluster.spec.volumes:  # the only exit scripts today: a volume's unmount
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
        self._unconfirmed.discard(node)
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
