"""The client's end of the fork server (`skyward.worker.forkserver`): a Local pool starts one
interpreter that imports the worker once, and each node's worker is a fork of it.

`ForkServer.fork` hands the server a worker's three pipe ends and gets back a `ForkedProcess`,
which stands in for `subprocess.Popen` where `PipeChannel` needs one: the worker is the
server's child, not ours, so waiting and killing go through a pidfd, which names that process
and no other even once its pid is reused.

Linux only (pidfds, file descriptors over Unix sockets); `available()` says whether this host
has what it needs, and Local starts workers from fresh interpreters where it has not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
from typing import IO, Any

import structlog

from skyward.transport.fork_protocol import MAX_REQUEST, PID

#: How long teardown waits for the server to see EOF and exit before it kills it.
CLOSE_TIMEOUT = 5.0


class ForkServerError(RuntimeError):
    """The fork server could not fork a worker (the caller starts one from a fresh interpreter)."""


def available() -> bool:
    """Whether this platform has pidfds and descriptor passing (Linux 5.3+ with Python 3.9+)."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "pidfd_open")
        and hasattr(signal, "pidfd_send_signal")
        and hasattr(socket, "send_fds")
        and hasattr(socket, "SOCK_SEQPACKET")
    )


class ForkedProcess:
    """A worker forked by the server: the part of `subprocess.Popen` that `PipeChannel` uses.

    `returncode` is not known (the server, its parent, collects it): only that it exited.
    """

    def __init__(self, pid: int, pidfd: int, stdin_fd: int, stdout_fd: int) -> None:
        self.pid = pid
        self._pidfd: int | None = pidfd
        self.stdin: IO[bytes] = open(stdin_fd, "wb", buffering=0)  # noqa: SIM115 - closed by the channel
        self.stdout: IO[bytes] = open(stdout_fd, "rb", buffering=0)  # noqa: SIM115 - closed by the channel

    def wait(self, timeout: float | None = None) -> None:
        """Block until the process exits; `subprocess.TimeoutExpired` after `timeout` seconds."""
        if not self._exited(timeout):
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)

    def kill(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def _exited(self, timeout: float | None) -> bool:
        pidfd = self._pidfd
        if pidfd is None:
            return True
        readable, _, _ = select.select([pidfd], [], [], timeout)
        if not readable:
            return False
        self._pidfd = None
        os.close(pidfd)
        return True


class ForkServer:
    """One per Local pool: started with the environment every worker of the pool shares, so the
    variables Python reads at start-up (PYTHONPATH, PYTHONHASHSEED...) are the ones a fresh
    worker would have read."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._lock = asyncio.Lock()

    def start(self) -> None:
        """Start the server; it imports the worker while the pool goes on (the first fork waits)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "skyward.worker.forkserver", str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=self.env,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # Ctrl-C in the client's terminal must not end it mid-start
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def fork(self, fds: tuple[int, int, int], env: dict[str, str], stdin_w: int, stdout_r: int) -> ForkedProcess:
        """Fork a worker on `fds` (its stdin read end, stdout write end, reply lane write end) with
        `env` on top of the server's environment, in this process's working directory. `stdin_w` and `stdout_r` are the client's ends,
        which the returned process owns. The caller closes `fds` afterwards, either way."""
        sock = self._sock
        if sock is None:
            raise ForkServerError("the fork server is closed")
        loop = asyncio.get_running_loop()
        request = json.dumps({"env": env, "cwd": os.getcwd()}).encode()
        async with self._lock:  # one request at a time: an answer belongs to the last request
            sent = False
            try:
                await _until(loop, sock, write=True)
                socket.send_fds(sock, [request], list(fds))
                sent = True
                await _until(loop, sock, write=False)
                message, received, _flags, _address = socket.recv_fds(sock, MAX_REQUEST, 1)
            except OSError as exc:
                raise ForkServerError(f"the fork server is unreachable: {exc!r}") from exc
            except BaseException:
                if sent:  # cancelled before its answer: the next request would read this one's
                    self._sock = None
                    sock.close()
                raise
        if len(message) < PID.size:
            for fd in received:
                os.close(fd)
            raise ForkServerError("the fork server exited (its traceback, if any, is above)")
        (pid,) = PID.unpack_from(message)
        if pid < 0 or len(received) != 1:
            for fd in received:
                os.close(fd)
            raise ForkServerError(f"the fork server could not fork: {message[PID.size :].decode(errors='replace')}")
        return ForkedProcess(pid, received[0], stdin_w, stdout_r)

    def close(self) -> None:
        """End the server (EOF on its socket); the workers it forked are the pool's to stop."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.wait(timeout=CLOSE_TIMEOUT)
        except subprocess.TimeoutExpired:
            structlog.get_logger().warning("skyward.forkserver_kill", pid=proc.pid)
            proc.kill()
            proc.wait()


async def _until(loop: asyncio.AbstractEventLoop, sock: socket.socket, *, write: bool) -> None:
    """Wait until `sock` is writable (or readable), without a thread."""
    ready: asyncio.Future[Any] = loop.create_future()

    def done() -> None:
        if not ready.done():
            ready.set_result(None)

    fd = sock.fileno()
    (loop.add_writer if write else loop.add_reader)(fd, done)
    try:
        await ready
    finally:
        (loop.remove_writer if write else loop.remove_reader)(fd)
