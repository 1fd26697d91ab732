"""Running commands over SSH: the bootstrap's `CommandRunner` (`SSHRunner`), and the shell lines
that start a worker with its pid recorded (`worker_command`) and kill what a pid file names
(`kill_command`)."""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh

from skyward.bootstrap.runner import DRAIN_GRACE, RunnerConnectionLost
from skyward.transport.ssh_connect import Connection, ssh_target

#: Marks the first stderr line of a command run by `SSHRunner`: its pid (= its process group).
PID_MARK = "::skyward-pid:"


class _CommandSession(asyncssh.SSHClientSession):  # type: ignore[misc]
    """One command's exec session: its output as lines, its exit status and the channel's end.

    The exit status and the end of the channel are separate on purpose: sshd sends the status as
    soon as the command exits, but closes the channel only once every process holding its output
    has closed it, which a daemon the command left behind may never do.
    """

    def __init__(self, on_line: Callable[[str, str], None]) -> None:
        loop = asyncio.get_running_loop()
        self._on_line = on_line
        self._pending = {"stdout": b"", "stderr": b""}
        self.pid: int | None = None
        self.exited: asyncio.Future[int] = loop.create_future()
        self.closed: asyncio.Future[BaseException | None] = loop.create_future()

    def data_received(self, data: bytes, datatype: Any) -> None:
        stream = "stderr" if datatype == asyncssh.EXTENDED_DATA_STDERR else "stdout"
        *lines, self._pending[stream] = (self._pending[stream] + data).split(b"\n")
        for line in lines:
            self._line(stream, line)

    def _line(self, stream: str, raw: bytes) -> None:
        text = raw.rstrip(b"\r").decode(errors="replace")
        if stream == "stderr" and self.pid is None and text.startswith(PID_MARK):
            with contextlib.suppress(ValueError):
                self.pid = int(text[len(PID_MARK):])
                return
        self._on_line(stream, text)

    def flush(self) -> None:
        """Hand on a last line that had no newline (the command's output ended, or was abandoned)."""
        for stream, rest in self._pending.items():
            if rest:
                self._pending[stream] = b""
                self._line(stream, rest)

    def exit_status_received(self, status: int) -> None:
        if not self.exited.done():
            self.exited.set_result(status)

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        if not self.exited.done():
            self.exited.set_result(255)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(exc)


class SSHRunner:
    """`skyward.bootstrap.CommandRunner` over one SSH connection: commands and copies (tar, or SFTP).

    `label` names the host in errors (default: the connection's user and address). `pid_file`, when
    given, is a path on the host where each command records its pid (= its process group), so that
    after a dropped connection the next connection can kill what the old one left running
    (`kill_command(pid_file)`). A dropped connection raises `RunnerConnectionLost`.
    """

    def __init__(self, conn: Connection, *, label: str = "", pid_file: str = "") -> None:
        self.conn = conn
        self.label = label or _describe(conn)
        self.pid_file = pid_file

    def _lost(self, exc: BaseException | None, doing: str) -> RunnerConnectionLost:
        why = f"{type(exc).__name__}: {exc}" if exc is not None else "closed"
        return RunnerConnectionLost(f"the SSH connection to {self.label} was lost while {doing} ({why})")

    async def run(
        self,
        command: str,
        *,
        stdin: str | None = None,
        on_line: Callable[[str, str], None] | None = None,
        timeout: float | None = None,
    ) -> int:
        """Run `command` with /bin/sh on the host; `on_line(stream, line)` per stdout/stderr line.

        Returns the exit status (255 when it died by a signal) once the command has exited: output
        still open `DRAIN_GRACE` seconds later (a daemon it started holds it) is abandoned, as
        `LocalRunner` does, and the daemon is left running. After `timeout` seconds, or when the
        call is cancelled, the command's whole process group is killed (over a second exec
        request: sshd forwards no signals) and `asyncio.TimeoutError` is raised. A dropped
        connection raises `RunnerConnectionLost`: whether the command still runs is unknown.
        """
        inner = f"echo {PID_MARK}$$ >&2; exec /bin/sh -c {shlex.quote(command)}"
        if self.pid_file:
            folder = shlex.quote(self.pid_file.rsplit("/", 1)[0] or "/")
            inner = f"mkdir -p {folder} && {record_pid(self.pid_file)}; {inner}"
        session = _CommandSession(on_line or (lambda stream, line: None))
        try:
            chan, _ = await self.conn.create_session(
                lambda: session, f"exec /bin/sh -c {shlex.quote(inner)}", encoding=None
            )
        except (OSError, asyncssh.Error) as exc:
            if self.conn.is_closed() or isinstance(exc, asyncssh.DisconnectError | ConnectionError):
                raise self._lost(exc, "starting a command") from None
            raise
        stop = True
        try:
            async with asyncio.timeout(timeout):
                with contextlib.suppress(OSError, asyncssh.Error):  # a lost connection shows below
                    if stdin is not None:
                        chan.write(stdin.encode())
                    chan.write_eof()
                await asyncio.wait([session.exited, session.closed], return_when=asyncio.FIRST_COMPLETED)
                if not session.exited.done() and session.closed.result() is not None:
                    stop = False  # nothing can be run on a dead connection
                    raise self._lost(session.closed.result(), "a command was running")
            stop = False
            # The command exited: read what is still in flight, but a daemon it started may hold
            # its output open for ever, and its exit status is what counts (outside the timeout:
            # a command that exited in time did not time out).
            await asyncio.wait([session.closed], timeout=DRAIN_GRACE)
        finally:
            session.flush()
            if stop:
                await self._stop(session.pid)
            chan.close()
        status = session.exited.result() if session.exited.done() else None
        return status if status is not None and status >= 0 else 255

    async def _stop(self, pid: int | None) -> None:
        if pid is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(asyncio.wait_for(
                    self.conn.run(f"kill -9 -- -{pid} 2>/dev/null; kill -9 {pid} 2>/dev/null; true"), 10
                ))

    async def put(self, local: Path, remote: str) -> None:
        """Copy the file or folder `local` to the path `remote` (not into it), creating parents; a
        folder is merged into an existing one. One tar archive over one exec request
        (`ssh_archive`), or SFTP on a host without tar. A dropped connection raises
        `RunnerConnectionLost`."""
        from skyward.transport.ssh_archive import NoTar, put_archive

        local = Path(local)
        try:
            try:
                await put_archive(self.conn, local, remote)
            except NoTar:
                await self._sftp_put(local, remote)
        except (OSError, asyncssh.Error) as exc:
            lost = isinstance(exc, asyncssh.DisconnectError | asyncssh.SFTPConnectionLost)
            if lost or self.conn.is_closed():
                raise self._lost(exc, f"copying {local.name} to {remote}") from None
            raise

    async def _sftp_put(self, local: Path, remote: str) -> None:
        async with self.conn.start_sftp_client() as sftp:
            if local.is_dir():
                await sftp.makedirs(remote, exist_ok=True)
                # Every child at once over the one session: a copy waits on round trips
                # (open, write, close), not on bandwidth, for the small files sent here.
                children = sorted(str(p) for p in local.iterdir())
                copies = [sftp.put(child, remote, recurse=True) for child in children]
                for result in await asyncio.gather(*copies, return_exceptions=True):
                    if isinstance(result, BaseException):
                        raise result
            else:
                parent = remote.rsplit("/", 1)[0]
                if parent:
                    await sftp.makedirs(parent, exist_ok=True)
                await sftp.put(str(local), remote)


def _describe(conn: Connection) -> str:
    """`user@host:port` of a connection, for messages."""
    host = str(conn.get_extra_info("host") or "?")
    port = int(conn.get_extra_info("port") or 22)
    return ssh_target(host, port, conn.get_extra_info("username") or None)


# -- the worker's command lines --------------------------------------------------------------------------


def record_pid(pid_file: str) -> str:
    """sh: write "<pid> <start>" of this shell into `pid_file`: its pid and when it started (clock
    ticks since boot, field 22 of /proc/<pid>/stat), which tells it from a later process that
    reuses the number (`kill_recorded`). In a subshell, so the caller's `$@` is left alone (`$$` is
    still the calling shell's); without /proc the start is left out and only the pid is written."""
    return (
        "(read -r __l < /proc/$$/stat 2>/dev/null; set -- ${__l##*) }; "
        f'echo "$$ ${{20:-}}") > {shlex.quote(pid_file)}'
    )


def kill_recorded(ref: str) -> str:
    """sh: kill the process group a pid file records (`record_pid`) and the pid itself, then drop
    the file. `ref` is the file as a shell word (quoted, or `"$f"`). A process that runs under that
    pid but started at another time is another program that took the number after ours ended: it
    is left alone (only the file goes). Where the pid runs no process, its group is still killed:
    Linux gives no new process a number that a live process group holds."""
    return (
        f'if [ -f {ref} ]; then __r=$(cat {ref}); __p=${{__r%% *}}; __s=${{__r#* }}; '
        '[ "$__s" = "$__r" ] && __s=""; '
        'if [ -n "$__p" ] && { [ -z "$__s" ] || [ ! -e "/proc/$__p" ] || '
        '{ read -r __l < "/proc/$__p/stat" && [ "$(set -- ${__l##*) }; echo "${20:-}")" = "$__s" ]; }; }; '
        'then kill -9 -- -"$__p" 2>/dev/null; kill -9 "$__p" 2>/dev/null; fi; '
        f"rm -f {ref}; fi"
    )


def worker_command(launch_line: str, *, pid_file: str, cwd: str) -> str:
    """The exec request that starts a worker: record its pid (= its process group: sshd made the
    shell a session leader, and `exec` keeps the pid) in `pid_file` and on stderr, then exec the
    launch line. Wrapped in /bin/sh so the user's login shell may be any shell."""
    script = f"cd {shlex.quote(cwd)} && {record_pid(pid_file)} && echo $$ >&2 && {launch_line}"
    return f"exec /bin/sh -c {shlex.quote(script)}"


def kill_command(pid_files: list[str] | str) -> str:
    """Kill the process group recorded in each pid file (and the pid itself), then drop the files;
    a pid some other process took since is left alone (`kill_recorded`)."""
    files = [pid_files] if isinstance(pid_files, str) else pid_files
    return "; ".join(kill_recorded(shlex.quote(file)) for file in files) + "; true"
