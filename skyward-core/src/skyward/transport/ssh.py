"""A worker on another machine, spoken to over an SSH exec channel (asyncssh).

The worker's stdin/stdout are the channel's data stream, in binary mode, so frames cross SSH as
they cross a pipe: nothing else is ever written to stdout. Its stderr carries one line before the
worker starts (the worker's pid, which is also its process group, written to a pid file as well)
and then only what Python prints if the worker dies before it captured fd 2, kept for the error.

Host keys are always verified: against a known_hosts file (the user's by default, read as OpenSSH
reads it: a host on a port other than 22 only matches `[host]:port` entries) or a key pinned by a
cloud provider (`Instance.host_key`). An unknown, changed or `@revoked` key is a `HostKeyError`
naming the host and the fingerprint; nothing is ever accepted silently. Private keys and
passphrases never reach a log line or an event.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh
import structlog

from skyward.bootstrap.runner import DRAIN_GRACE, RunnerConnectionLost
from skyward.errors import HostKeyError
from skyward.retry import backoff, retry
from skyward.transport.base import Channel
from skyward.wire import FrameDecoder, Kind, encode

#: Receive window of a worker channel: large, so a big result streams without stalls.
WINDOW = 16 * 1024 * 1024
#: Marks the first stderr line of a command run by `SSHRunner`: its pid (= its process group).
PID_MARK = "::skyward-pid:"
#: Frame parts smaller than this are joined into one write (one SSH packet).
COALESCE = 64 * 1024
#: Bytes of a dead worker's stderr kept for the error message.
STDERR_TAIL = 8192
#: Seconds between SSH keepalives, and how many may go unanswered before the connection is lost.
KEEPALIVE_INTERVAL = 15
KEEPALIVE_COUNT = 4

Connection = asyncssh.SSHClientConnection

# asyncssh logs every connection and channel at INFO; unless the application set a level for it,
# keep it to warnings so an application's INFO logging is not flooded by the transport.
if logging.getLogger("asyncssh").level == logging.NOTSET:
    logging.getLogger("asyncssh").setLevel(logging.WARNING)


class SSHAuthError(ConnectionError):
    """The host refused every key offered (or the key file is unusable): retrying will not help."""


# -- connecting ---------------------------------------------------------------------------------------


def default_known_hosts() -> Path:
    return Path("~/.ssh/known_hosts").expanduser()


def _target(host: str, port: int, user: str | None) -> str:
    where = f"{host}:{port}" if port != 22 else host
    return f"{user}@{where}" if user else where


def openssh_match(
    known: Any, host: str, addr: str, port: int | None
) -> tuple[list[Any], list[Any], list[Any]]:
    """The (trusted, CA, revoked) keys `known` lists for this host, read the way OpenSSH reads them.

    On a port other than 22 only `[host]:port` entries count: OpenSSH never falls back to a
    port-less `host` entry there, while asyncssh's own lookup does, so a key recorded for another
    service on the same machine (port 22) would be trusted for this one. The name and the address
    are both looked up, as asyncssh does.
    """
    if not port or port == 22:
        found = known.match(host, addr, None)
        return list(found[0]), list(found[1]), list(found[2])
    trusted: list[Any] = []
    cas: list[Any] = []
    revoked: list[Any] = []
    for name in dict.fromkeys(n for n in (host, addr) if n):
        # With the port in the name and none passed, asyncssh looks up exactly "[name]:port".
        found = known.match(f"[{name}]:{port}", "", None)
        trusted += found[0]
        cas += found[1]
        revoked += found[2]
    return trusted, cas, revoked


def _trusted_keys(
    host: str, port: int, known_hosts: str | os.PathLike[str] | None, host_key: str | None
) -> tuple[Any, str]:
    """What asyncssh should trust for this host, and a phrase naming where that came from."""
    if host_key:
        try:
            key = asyncssh.import_public_key(host_key)
        except (asyncssh.KeyImportError, ValueError) as exc:
            raise HostKeyError(
                f"The host key pinned for {host} could not be read ({exc}); expected an OpenSSH public key "
                "line such as 'ssh-ed25519 AAAA...'."
            ) from None
        return ([key], [], []), "the host key pinned for this instance"
    path = Path(known_hosts).expanduser() if known_hosts else default_known_hosts()
    if path.is_file():
        return functools.partial(openssh_match, asyncssh.read_known_hosts(str(path))), str(path)
    return ([], [], []), f"{path} (which does not exist)"


def _listed(trusted: Any, host: str, port: int) -> tuple[list[Any], list[Any], list[Any]]:
    """The (trusted, CA, revoked) keys behind `trusted` for this host, to word an error with."""
    if callable(trusted):
        return trusted(host, host, port if port != 22 else None)
    return trusted


def _host_key_error(host: str, port: int, user: str | None, seen: list[Any], trusted: Any, source: str,
                    known_hosts: str | os.PathLike[str] | None, pinned: bool = False,
                    reason: str = "") -> HostKeyError:
    target = _target(host, port, user)
    if seen:
        key = seen[-1]
        shown = f"the {key.get_algorithm()} host key {key.get_fingerprint()}"
    else:
        shown = "a host key"
    if pinned:
        expected = trusted[0][0]
        return HostKeyError(
            f"SSH host {target} presented {shown}, but the key pinned for this instance is "
            f"{expected.get_algorithm()} {expected.get_fingerprint()}; the connection was refused. The "
            "instance was replaced, or someone is intercepting the connection: terminate it and start again."
        )
    try:
        listed, _, revoked = _listed(trusted, host, port)
    except Exception:  # noqa: BLE001 - only used to word the message
        listed, revoked = [], []
    pattern = f"[{host}]:{port}" if port != 22 else host
    file = str(Path(known_hosts).expanduser()) if known_hosts else str(default_known_hosts())
    keyscan = f"ssh-keyscan -p {port} {host}" if port != 22 else f"ssh-keyscan {host}"
    if not seen and (revoked or "revoked" in reason):
        # asyncssh refuses a revoked key before asking us, so the key shown is the one revoked here.
        which = ", ".join(f"{k.get_algorithm()} {k.get_fingerprint()}" for k in revoked)
        return HostKeyError(
            f"SSH host {target} presented a host key that {source} marks @revoked"
            f"{f' ({which})' if which else ''}; the connection was refused. A revoked key is never "
            "trusted, whatever other lines of the file say. If the key was revoked because it leaked, give "
            f"the host a new host key, check its fingerprint out of band and add it ({keyscan} >> {file}). "
            f"If the @revoked line is a mistake, delete it from {file}."
        )
    if listed:
        what = f"which does not match the key recorded for it in {source}"
        todo = (
            "If the host was reinstalled and you trust the new key, remove the old entry "
            f"(ssh-keygen -R '{pattern}' -f {file}) and add the new one ({keyscan} >> {file}) after checking "
            "its fingerprint out of band. Otherwise someone may be intercepting the connection."
        )
    else:
        what = f"which is not listed in {source}"
        todo = (
            "Check the fingerprint out of band (on the host: ssh-keygen -lf "
            f"/etc/ssh/ssh_host_ed25519_key.pub), then trust it: {keyscan} >> {file}, "
            "or pass SSH(known_hosts=...) naming a file that has it."
        )
        if port != 22 and callable(trusted) and _listed(trusted, host, 22)[0]:
            todo += (
                f" ({file} lists {host} without a port, which is its port 22; as in OpenSSH, a host on "
                f"port {port} is only matched by entries written [{host}]:{port}.)"
            )
    return HostKeyError(f"SSH host {target} presented {shown}, {what}; the connection was refused. {todo}")


async def connect(
    host: str,
    port: int = 22,
    user: str | None = None,
    *,
    key_file: str | os.PathLike[str] | None = None,
    known_hosts: str | os.PathLike[str] | None = None,
    host_key: str | None = None,
    agent: bool = True,
    timeout: float = 30.0,
) -> Connection:
    """Open an SSH connection with the host key verified; raise `HostKeyError` or `ConnectionError`.

    Keys: `key_file` when given (only that key); otherwise the ssh-agent (`SSH_AUTH_SOCK`, unless
    `agent=False`) and the usual `~/.ssh/id_*` files. `~/.ssh/config` is not read: what is passed
    here is what is used.
    """
    trusted, source = _trusted_keys(host, port, known_hosts, host_key)
    seen: list[Any] = []

    class _Client(asyncssh.SSHClient):
        def validate_host_public_key(self, host: str, addr: str, port: int, key: Any) -> bool:
            seen.append(key)  # only called for a key that known_hosts does not trust
            return False

    kwargs: dict[str, Any] = {"encryption_algs": _ciphers(), "compression_algs": None}
    if key_file is not None:
        path = Path(key_file).expanduser()
        if not path.is_file():
            raise SSHAuthError(
                f"The SSH key file {path} does not exist; pass SSH(key_file=...) naming a private key"
            )
        kwargs["client_keys"] = [str(path)]
        kwargs["agent_path"] = None
    elif not agent or not os.environ.get("SSH_AUTH_SOCK"):
        kwargs["agent_path"] = None
    try:
        return await asyncio.wait_for(
            asyncssh.connect(
                host, port, username=user or None, known_hosts=trusted, client_factory=_Client, config=None,
                connect_timeout=timeout, keepalive_interval=KEEPALIVE_INTERVAL,
                keepalive_count_max=KEEPALIVE_COUNT, **kwargs,
            ),
            timeout,
        )
    except asyncssh.HostKeyNotVerifiable as exc:
        raise _host_key_error(
            host, port, user, seen, trusted, source, known_hosts, bool(host_key), str(exc)
        ) from None
    except asyncssh.PermissionDenied:
        which = f"the key {key_file}" if key_file is not None else "your ssh-agent's keys and ~/.ssh/id_*"
        raise SSHAuthError(
            f"SSH host {_target(host, port, user)} refused {which}: add the public key to that user's "
            "~/.ssh/authorized_keys, or pass SSH(key_file=...) naming a key it accepts."
        ) from None
    except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
        raise SSHAuthError(
            f"The SSH key {key_file} could not be used ({type(exc).__name__}); an encrypted key must be "
            "loaded into ssh-agent (ssh-add) instead of being passed as key_file."
        ) from None
    except (TimeoutError, OSError, asyncssh.Error) as exc:
        reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else f"{type(exc).__name__}: {exc}"
        target = _target(host, port, user)
        raise ConnectionError(f"Could not connect to SSH host {target} ({reason})") from None


def _ciphers() -> list[str]:
    """asyncssh's defaults with AES-GCM first: hardware AES halves the per-message latency of the
    default chacha20-poly1305 (measured on loopback: ~190 us against ~340 us per echo)."""
    from asyncssh.encryption import get_default_encryption_algs

    algs = list(get_default_encryption_algs())
    preferred = [a for a in (b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com") if a in algs]
    return [a.decode() for a in preferred + [a for a in algs if a not in preferred]]


def is_permanent(exc: BaseException) -> bool:
    """Failures that retrying cannot fix: a host key or credentials problem."""
    return isinstance(exc, HostKeyError | SSHAuthError)


async def connect_with_retry(
    host: str,
    port: int,
    user: str | None,
    *,
    deadline: float,
    interval: float = 1.0,
    on_retry: Callable[[BaseException, float], None] | None = None,
    **kwargs: Any,
) -> Connection:
    """`connect`, retried with exponential backoff (from `interval`, doubling, at most 10 s) until
    `deadline` (a `time.monotonic()` value). Host key and credential errors are not retried."""

    async def attempt() -> Connection:
        left = deadline - time.monotonic()
        return await connect(host, port, user, timeout=max(min(left, 30.0), 1.0), **kwargs)

    return await retry(
        attempt,
        retry_on=lambda exc: isinstance(exc, ConnectionError) and not is_permanent(exc),
        delays=backoff(max(interval, 0.1), cap=10.0),
        deadline=deadline,
        on_retry=None if on_retry is None else lambda _tries, exc, wait: on_retry(exc, wait),
    )


# -- per-pool keys (clouds inject the public half at provision) ---------------------------------------


def pool_key(pool_id: str) -> tuple[Path, str]:
    """This pool's ed25519 key pair under `~/.skyward/keys/` (`$SKYWARD_HOME`), created mode 0600
    on first use; returns the private key's path and the public key's OpenSSH line."""
    from skyward.logging import skyward_home

    folder = skyward_home() / "keys"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{pool_id}_ed25519"
    if not path.exists():
        key = asyncssh.generate_private_key("ssh-ed25519", comment=f"skyward {pool_id}")
        data = key.export_private_key()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        path.with_suffix(".pub").write_bytes(key.export_public_key())
    public = path.with_suffix(".pub").read_text().strip()
    return path, public


def remove_pool_key(pool_id: str) -> None:
    from skyward.logging import skyward_home

    path = skyward_home() / "keys" / f"{pool_id}_ed25519"
    for file in (path, path.with_suffix(".pub")):
        with contextlib.suppress(FileNotFoundError):
            file.unlink()


# -- running commands (the bootstrap's CommandRunner) --------------------------------------------------


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
    """`skyward.bootstrap.CommandRunner` over one SSH connection: commands and SFTP copies.

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
            inner = f"mkdir -p {folder} && echo $$ > {shlex.quote(self.pid_file)}; {inner}"
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
        folder is merged into an existing one. A dropped connection raises `RunnerConnectionLost`."""
        local = Path(local)
        try:
            async with self.conn.start_sftp_client() as sftp:
                if local.is_dir():
                    await sftp.makedirs(remote, exist_ok=True)
                    children = sorted(str(p) for p in local.iterdir())
                    if children:
                        await sftp.put(children, remote, recurse=True)
                else:
                    parent = remote.rsplit("/", 1)[0]
                    if parent:
                        await sftp.makedirs(parent, exist_ok=True)
                    await sftp.put(str(local), remote)
        except (OSError, asyncssh.Error) as exc:
            lost = isinstance(exc, asyncssh.DisconnectError | asyncssh.SFTPConnectionLost)
            if lost or self.conn.is_closed():
                raise self._lost(exc, f"copying {local.name} to {remote}") from None
            raise


def _describe(conn: Connection) -> str:
    """`user@host:port` of a connection, for messages."""
    host = str(conn.get_extra_info("host") or "?")
    port = int(conn.get_extra_info("port") or 22)
    return _target(host, port, conn.get_extra_info("username") or None)


# -- the worker channel ------------------------------------------------------------------------------


def worker_command(launch_line: str, *, pid_file: str, cwd: str) -> str:
    """The exec request that starts a worker: record its pid (= its process group: sshd made the
    shell a session leader, and `exec` keeps the pid) in `pid_file` and on stderr, then exec the
    launch line. Wrapped in /bin/sh so the user's login shell may be any shell."""
    script = (
        f"cd {shlex.quote(cwd)} && echo $$ > {shlex.quote(pid_file)} && echo $$ >&2 && {launch_line}"
    )
    return f"exec /bin/sh -c {shlex.quote(script)}"


def kill_command(pid_files: list[str] | str) -> str:
    """Kill the process group recorded in each pid file (and the pid itself), then drop the files."""
    files = [pid_files] if isinstance(pid_files, str) else pid_files
    parts = []
    for file in files:
        q = shlex.quote(file)
        parts.append(
            f'if [ -f {q} ]; then p=$(cat {q}); [ -n "$p" ] && {{ kill -9 -- -"$p" 2>/dev/null; '
            f'kill -9 "$p" 2>/dev/null; }}; rm -f {q}; fi'
        )
    return "; ".join(parts) + "; true"


class _Session(asyncssh.SSHClientSession):  # type: ignore[misc]
    def __init__(self, channel: SSHChannel) -> None:
        self._channel = channel

    def data_received(self, data: bytes, datatype: Any) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self._channel._on_stderr(data)
        else:
            self._channel._on_data(data)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._channel._on_lost(exc)


class SSHChannel(Channel):
    """The `Channel` over an asyncssh exec session; owned by the pool's event loop."""

    def __init__(self, conn: Connection, command: str, *, pid_file: str = "", label: str = "") -> None:
        super().__init__()
        self._conn = conn
        self._command = command
        self._pid_file = pid_file
        self._label = label
        self._chan: Any = None
        self._decoder = FrameDecoder(lambda frame: self.on_frame(frame))
        self._early: list[bytes] | None = []  # data that arrived before start()
        self._stderr = bytearray()
        self._pid: int | None = None
        self._closed = False  # no more on_closed: close() was called or the loss was reported
        self._gone = asyncio.Event()
        self._kill_task: asyncio.Task[None] | None = None

    async def open(self) -> SSHChannel:
        """Start the remote command; frames are delivered after `start()`."""
        self._chan, _ = await self._conn.create_session(
            lambda: _Session(self), self._command, encoding=None, window=WINDOW
        )
        return self

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def pid_file(self) -> str:
        """Where the remote side recorded the worker's pid (its process group)."""
        return self._pid_file

    @property
    def stderr_tail(self) -> str:
        return self._stderr.decode(errors="replace")

    def start(self) -> None:
        early, self._early = self._early, None
        for data in early or ():
            self._feed(data)

    # -- receiving -------------------------------------------------------------------------------

    def _on_data(self, data: bytes) -> None:
        if self._early is not None:
            self._early.append(data)
        else:
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        try:
            self._decoder.feed(data)
        except Exception as exc:  # noqa: BLE001 - a broken frame ends the channel
            structlog.get_logger().warning("skyward.channel_read_failed", node=self._label, error=repr(exc))
            self._report(exc)
            if self._chan is not None:
                self._chan.close()

    def _on_stderr(self, data: bytes) -> None:
        if self._pid is None and b"\n" in self._stderr + data:
            line, _, rest = bytes(self._stderr + data).partition(b"\n")
            self._stderr.clear()
            with contextlib.suppress(ValueError):
                self._pid = int(line.strip())
            data = rest
        self._stderr += data
        if len(self._stderr) > STDERR_TAIL:
            del self._stderr[: len(self._stderr) - STDERR_TAIL]

    def _on_lost(self, exc: BaseException | None) -> None:
        self._gone.set()
        if exc is None and self._stderr.strip():
            exc = ConnectionError(f"the worker exited; its stderr ends with:\n{self.stderr_tail.strip()}")
        self._report(exc)

    def _report(self, exc: BaseException | None) -> None:
        if self._closed:
            return
        self._closed = True
        self.on_closed(exc)

    # -- sending ---------------------------------------------------------------------------------

    def send_parts(self, parts: list[Any]) -> None:
        chan = self._chan
        if self._closed or chan is None:
            return
        try:
            # One SSH packet per small frame rather than one per part; large buffers go as they are
            # (asyncssh copies what it is given once, so joining them would only add a copy).
            small = bytearray()
            for part in parts:
                if len(part) < COALESCE:
                    small += part
                    continue
                if small:
                    chan.write(small)
                    small = bytearray()
                chan.write(part)
            if small:
                chan.write(small)
        except (BrokenPipeError, OSError) as exc:
            self._report(exc)

    # -- stopping --------------------------------------------------------------------------------

    async def close(self, timeout: float = 5.0) -> None:
        chan = self._chan
        if chan is None:
            return
        if not self._closed:
            with contextlib.suppress(Exception):
                self.send_parts(encode(Kind.SHUTDOWN, 0))
                chan.write_eof()  # stdin EOF: the worker exits even if it missed SHUTDOWN
        self._closed = True
        try:
            await asyncio.wait_for(self._gone.wait(), timeout)
        except TimeoutError:
            await self._kill_remote()
        chan.close()
        if self._kill_task is not None:
            with contextlib.suppress(BaseException):
                await self._kill_task

    def kill(self) -> None:
        if self._chan is None or self._kill_task is not None:
            return
        self._kill_task = asyncio.get_running_loop().create_task(self._kill_remote())

    async def _kill_remote(self) -> None:
        """Kill the worker's process group over a separate exec request, then drop the channel.

        On a dead connection there is nothing to run: the worker sees EOF on its stdin (sshd is
        gone) and exits by itself; the provider also kills leftovers by pid file on reconnect.
        """
        if self._pid is not None:
            command = f"kill -9 -- -{self._pid} 2>/dev/null; kill -9 {self._pid} 2>/dev/null; true"
        elif self._pid_file:
            command = kill_command(self._pid_file)
        else:
            command = ""
        if command and not self._gone.is_set():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.run(command, check=False), 10)
        if self._chan is not None:
            self._chan.close()
