"""A worker's start on an SSH node (`RemoteNodes`): the bootstrap and the worker's start, together.

Across a slow link a start is counted in round trips, and each request on a new channel costs
two (the channel's open, then its exec request) before its command runs. So a start sends, on the
node's connection and in the same instant:

- the worker's start under its keeper (`keeper_command(after=...)`), which waits on the node for
  the bootstrap script's exit status and then starts the worker, with no round trip between;
- the bootstrap, its script inside the exec request itself (`InlineRunner`), not on stdin after
  the request's answer: it runs as soon as the request arrives.

The script starts the guardian first (`guardian.script_start`), and its answer opens the lease's
renewal meanwhile (`remote_guard`). A start sent on a recorded home (`remote_login`) checks on
the node that `$HOME` is still that one, in both requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import secrets
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skyward.providers.remote_login import ENVIRONMENTS, Login, home_check
from skyward.transport.ssh_commands import SSHRunner, record_pid

if TYPE_CHECKING:
    from skyward.providers.base import Cluster, Instance, NodeSetup
    from skyward.transport.ssh import SSHChannel
    from skyward.transport.ssh_connect import Connection

#: The largest stdin `InlineRunner` puts inside its exec request (quoted twice, as `SSHRunner`
#: wraps a command): the login's shell gets the request as one argument, which Linux caps at 128 KiB.
INLINE_LIMIT = 100_000


def inline_stdin(command: str, stdin: str) -> str | None:
    """`command` reading `stdin` from a here-document of its own, or None when it would not fit
    in one request (`INLINE_LIMIT`)."""
    delimiter = f"SKYWARD_STDIN_{secrets.token_hex(8)}"
    if delimiter in stdin:
        return None
    text = stdin if stdin.endswith("\n") else stdin + "\n"
    inline = f"{command} <<'{delimiter}'\n{text}{delimiter}\n"
    return inline if len(shlex.quote(shlex.quote(inline))) <= INLINE_LIMIT else None


class InlineRunner(SSHRunner):
    """An `SSHRunner` whose commands carry their stdin in their exec request (`inline_stdin`), so
    that a script runs on the node as the request arrives, one round trip before stdin written
    after the request's answer would. `before`, when given, is called once, just before the first
    command's channel opens (the worker's start sent with the bootstrap). `check`, when given, is
    a shell command each command runs first, before anything is made on the node (a recorded
    home's `home_check`); the pid file is recorded after it."""

    def __init__(
        self, conn: Connection, *, before: Callable[[], None] | None = None, check: str = "",
        label: str = "", pid_file: str = "",
    ) -> None:
        super().__init__(conn, label=label)
        self._before = before
        self._check = check
        self._record = pid_file

    async def run(self, command: str, *, stdin: str | None = None, **kwargs: Any) -> int:
        if self._before is not None:
            before, self._before = self._before, None
            before()
            await asyncio.sleep(0)  # its channel's open goes first, in the same instant
        if self._record:  # as `SSHRunner` records it, after the check: the same shell, the same pid
            folder = shlex.quote(self._record.rsplit("/", 1)[0] or "/")
            command = f"{{ mkdir -p {folder} && {record_pid(self._record)}; }}; {command}"
        if self._check:
            command = f"{self._check}; {command}"
        if stdin is not None and (inline := inline_stdin(command, stdin)) is not None:
            command, stdin = inline, None
        return await super().run(command, stdin=stdin, **kwargs)


class WorkerStarts:
    """Mixed into `RemoteNodes`: a node's bootstrap, and the start of its workers."""

    _logins: dict[int, Login]
    _conns: dict[int, Any]
    _homes: dict[int, str]
    #: The nodes whose home comes from the client's record, not yet confirmed by a bootstrap.
    _unconfirmed: set[int]
    _node_locks: dict[int, asyncio.Lock]
    _renewing: dict[int, tuple[Any, asyncio.Future[None]]]
    _launches: int
    _run: str
    _log: Any

    if TYPE_CHECKING:  # RemoteNodes' and NodeGuards'

        def workdir(self, cluster: Cluster, node: int) -> str: ...
        def python_bin(self) -> str: ...
        def bootstrap_args(self) -> dict[str, Any]: ...
        async def open(self, node: int, login: Login, timeout: float | None = None) -> Connection: ...
        async def _connection(self, node: int, instance: Instance, timeout: float | None = None) -> Any: ...
        def _guardian_first(self, node: int, cluster: Cluster, setup: NodeSetup, workdir: str) -> Any: ...

    def _pid_file(self, workdir: str) -> str:
        self._launches += 1
        return f"{workdir}/worker-{self._run}-{self._launches}.pid"

    def _home_check(self, node: int) -> str:
        return home_check(self._homes[node]) if node in self._unconfirmed else ""

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
        """Bootstrap the node while the worker's start is on its way (the module's docstring). The
        channel is None when the bootstrap had to reconnect (the worker then starts on the new
        connection)."""
        from skyward.bootstrap.render import Script

        node = instance.node
        pid_file = self._pid_file(workdir)
        status = posixpath.basename(pid_file).removesuffix(".pid") + ".bootstrap"  # this run's own
        where = Script(text="", python_bin="", venv_dir="", workdir=workdir)  # env.sh and launch line
        early: list[asyncio.Future[SSHChannel]] = []

        def send_worker() -> None:
            early.append(asyncio.ensure_future(
                self._open_worker(conn, instance, where, setup, pid_file, cluster, after=status)
            ))

        try:
            script = await self._bootstrap(conn, cluster, setup, node, workdir, status, send_worker)
        except BaseException:
            renewing = self._renewing.pop(node, None)
            if renewing is not None:
                renewing[1].cancel()
            await self._drop_early(early, self._conns.get(node), pid_file)
            raise
        if self._conns[node] is not conn or not early:
            await self._drop_early(early, self._conns[node], pid_file)
            return script, None
        return script, await early[0]

    async def _drop_early(self, early: list[asyncio.Future[SSHChannel]], conn: Any, pid_file: str) -> None:
        """The worker's start sent with a bootstrap that failed or moved to a new connection: what
        it started on the node (the shell waiting for the bootstrap, or the keeper) is killed."""
        from skyward.transport.ssh_commands import kill_command
        from skyward.transport.ssh_link import keeper_pid_file, waiting_pid_file

        if not early:
            return
        early[0].cancel()
        await asyncio.gather(early[0], return_exceptions=True)
        # Its channel closes with the processes killed here (or died with its connection).
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                command = kill_command([waiting_pid_file(pid_file), pid_file, keeper_pid_file(pid_file)])
                await asyncio.wait_for(conn.run(command, check=False), 30)

    def _kept(
        self, node: int, instance: Instance, script: Any, setup: NodeSetup, pid_file: str, workdir: str,
        grace: float, after: str = "",
    ) -> tuple[str, Any]:
        """The worker's start under its keeper, and how its channel comes back after a drop
        (`skyward.transport.ssh_link`): within the pool's lease `ttl`, on a new login."""
        from skyward.transport.ssh_link import Resume, attach_command, keeper_command

        where = {"python": self.python_bin(), "env_file": script.env_file, "pid_file": pid_file}
        where["cwd"] = workdir
        check = self._home_check(node) if after else ""
        launch = script.launch_line(setup.launch)
        command = keeper_command(launch, grace=grace, after=after, check=check, **where)

        async def reconnect(timeout: float) -> Connection:
            async with self._node_locks.setdefault(node, asyncio.Lock()):
                return await self._connection(node, instance, timeout)

        return command, Resume(reconnect, attach_command(**where), grace)

    async def _bootstrap(
        self, conn: Connection, cluster: Cluster, setup: NodeSetup, node: int, workdir: str, status: str,
        before: Callable[[], None] | None = None,
    ) -> Any:
        from skyward.bootstrap import prepare_node
        from skyward.bootstrap.phases import STATUS_VARIABLE
        from skyward.transport.ssh_commands import kill_command

        login = self._logins[node]
        pid_file = f"{workdir}/bootstrap.pid"
        first, on_guardian = self._guardian_first(node, cluster, setup, workdir)
        # Where its exit status goes.
        check = self._home_check(node)  # on a recorded home, before anything: that it is the login's
        first = f"{STATUS_VARIABLE}={shlex.quote(status)}\n" + first
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
            return InlineRunner(new, check=self._home_check(node), label=str(login), pid_file=starting)

        runner = InlineRunner(conn, before=before, check=check, label=str(login), pid_file=starting)
        return await prepare_node(
            runner, setup, node=node,
            workdir=workdir, reconnect=reconnect, environments_root=f"{self._homes[node]}/{ENVIRONMENTS}",
            first=first, on_guardian=on_guardian, **self.bootstrap_args(),
        )
