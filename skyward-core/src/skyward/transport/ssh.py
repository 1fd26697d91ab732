"""A worker on another machine, spoken to over an SSH exec channel (asyncssh).

The worker's stdin/stdout are the channel's data stream, in binary mode, so frames cross SSH as
they cross a pipe: nothing else is ever written to stdout. Its stderr carries one line before the
worker starts (the worker's pid, which is also its process group, written to a pid file as well)
and then only what Python prints if the worker dies before it captured fd 2, kept for the error.

Connecting (host keys always verified, pool keys) is `ssh_connect`'s; running commands (the
bootstrap's runner, the worker's command lines) is `ssh_commands`'. Their public names are also
importable from here, where the providers and tests have always found them.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncssh
import structlog

from skyward.transport.base import Channel
from skyward.transport.ssh_commands import PID_MARK, SSHRunner, kill_command, worker_command
from skyward.transport.ssh_connect import (
    Connection,
    SSHAuthError,
    connect,
    connect_with_retry,
    default_known_hosts,
    is_permanent,
    openssh_match,
    pool_key,
    remove_pool_key,
)
from skyward.transport.ssh_outbox import Outbox
from skyward.wire import FrameDecoder, Kind, encode

__all__ = [
    "PID_MARK", "Connection", "SSHAuthError", "SSHChannel", "SSHRunner", "connect", "connect_with_retry",
    "default_known_hosts", "is_permanent", "kill_command", "openssh_match", "pool_key", "remove_pool_key",
    "worker_command",
]

#: Receive window of a worker channel: large, so a big result streams without stalls.
WINDOW = 16 * 1024 * 1024
#: Bytes of a dead worker's stderr kept for the error message.
STDERR_TAIL = 8192


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

    def pause_writing(self) -> None:
        if self._channel._outbox is not None:
            self._channel._outbox.pause()

    def resume_writing(self) -> None:
        if self._channel._outbox is not None:
            self._channel._outbox.resume()

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
        self._outbox: Any = None  # an Outbox once the channel is open

    async def open(self) -> SSHChannel:
        """Start the remote command; frames are delivered after `start()`."""
        self._chan, _ = await self._conn.create_session(
            lambda: _Session(self), self._command, encoding=None, window=WINDOW
        )
        self._outbox = Outbox(self._chan, self._report)
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
        if self._outbox is not None:
            self._outbox.clear()
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
        """Queue frames: the first of a loop iteration leaves at once, the rest at its end, large
        buffers as the window opens (see `skyward.transport.ssh_outbox`)."""
        if self._closed or self._outbox is None:
            return
        self._outbox.send(parts)

    # -- stopping --------------------------------------------------------------------------------

    async def close(self, timeout: float = 5.0) -> None:
        chan = self._chan
        if chan is None:
            return
        if not self._closed:
            with contextlib.suppress(Exception):
                self.send_parts(encode(Kind.SHUTDOWN, 0))
                await self._outbox.drained(timeout)  # what is still queued goes before the EOF
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
