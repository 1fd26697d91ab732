"""A worker on another machine, spoken to over an SSH exec channel (asyncssh).

The worker's stdin/stdout are the channel's data stream, in binary mode, so frames cross SSH as
they cross a pipe: nothing else is ever written to stdout. Its stderr carries one line before the
worker starts (the worker's pid, which is also its process group, written to a pid file as well)
and then only what Python prints if the worker dies before it captured fd 2, kept for the error.

A pool's worker runs under a keeper on its node (`skyward.transport.keeper`, `Resume`): a dropped
connection then does not lose the node. The channel logs in again with backoff, attaches to the
same keeper and worker, and each side sends what the other missed; the node is lost only after the
grace period. The keeper's control lines share stderr with the pid (`::skyward-...`).

Connecting (host keys always verified, pool keys) is `ssh_connect`'s; running commands (the
bootstrap's runner, the worker's command lines) is `ssh_commands`'.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncssh
import structlog

from skyward.transport.base import Channel
from skyward.transport.ssh_commands import kill_command
from skyward.transport.ssh_connect import Connection, is_permanent
from skyward.transport.ssh_link import (
    ACK_DELAY,
    ACK_EVERY,
    ATTACH_TIMEOUT,
    FIRST_PAUSE,
    MAX_PAUSE,
    LinkWriter,
    Resume,
    ack_frame,
    end_frame,
    greeting,
    keeper_pid_file,
)
from skyward.transport.ssh_outbox import Outbox
from skyward.wire import FrameDecoder, Kind, encode

#: Receive window of a worker channel: large, so a big result streams without stalls.
WINDOW = 16 * 1024 * 1024
#: Bytes of a dead worker's stderr kept for the error message.
STDERR_TAIL = 8192
#: How the keeper's control lines on stderr start (`skyward.transport.keeper.MARK`).
MARK = b"::skyward-"


class _Session(asyncssh.SSHClientSession):  # type: ignore[misc]
    """One exec channel of an `SSHChannel`; once a newer one replaced it, it is not heard."""

    def __init__(self, channel: SSHChannel) -> None:
        self._channel = channel

    def data_received(self, data: bytes, datatype: Any) -> None:
        if self._channel._session is not self:
            return
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self._channel._on_stderr(data)
        else:
            self._channel._on_data(data)

    def eof_received(self) -> bool:
        return False

    def pause_writing(self) -> None:
        if self._channel._outbox is not None and self._channel._session is self:
            self._channel._outbox.pause()

    def resume_writing(self) -> None:
        if self._channel._outbox is not None and self._channel._session is self:
            self._channel._outbox.resume()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._channel._session is self:
            self._channel._on_lost(exc)


class SSHChannel(Channel):
    """The `Channel` over an asyncssh exec session; owned by the pool's event loop.

    With `resume`, the command starts the worker under its keeper, and a lost session is replaced
    by a new one on the same keeper within `resume.grace` seconds (see the module docstring)."""

    def __init__(
        self, conn: Connection, command: str, *, pid_file: str = "", label: str = "",
        resume: Resume | None = None,
    ) -> None:
        super().__init__()
        self._conn = conn
        self._command = command
        self._pid_file = pid_file
        self._label = label
        self._resume = resume
        self._chan: Any = None
        self._session: _Session | None = None
        self._decoder = FrameDecoder(lambda frame: self.on_frame(frame))
        self._early: list[bytes] | None = []  # data that arrived before start()
        self._stderr = bytearray()
        self._pending_line = bytearray()
        self._pid: int | None = None
        self._closed = False  # no more on_closed: close() was called or the loss was reported
        self._gone = asyncio.Event()
        self._kill_task: asyncio.Task[None] | None = None
        self._outbox: Any = None  # an Outbox once the channel is open
        self._writer: LinkWriter | None = None
        # The keeper's side of the link: bytes received, acknowledged, and its answers.
        self._received = 0
        self._acked = 0
        self._ack_timer: asyncio.TimerHandle | None = None
        self._keeper_up = False  # the keeper answered a first attachment
        self._exited = False  # the keeper said its worker exited: no coming back
        self._attached: asyncio.Future[int] | None = None
        self._reattach: asyncio.Task[None] | None = None
        #: How many times the link was reattached (for the logs and the tests).
        self.reattached = 0

    async def open(self) -> SSHChannel:
        """Start the remote command; frames are delivered after `start()`."""
        session = _Session(self)
        self._session = session
        self._chan, _ = await self._conn.create_session(
            lambda: session, self._command, encoding=None, window=WINDOW
        )
        self._writer = LinkWriter(self._chan, keep=self._resume is not None)
        if self._resume is not None:
            self._chan.write(greeting(0))
        self._outbox = Outbox(self._writer, self._report)
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
        return (self._stderr + self._pending_line).decode(errors="replace")

    def start(self) -> None:
        early, self._early = self._early, None
        for data in early or ():
            self._feed(data)

    # -- receiving -------------------------------------------------------------------------------

    def _on_data(self, data: bytes) -> None:
        if self._resume is not None:
            self._received += len(data)
            self._acknowledge_soon()
        if self._early is not None:
            self._early.append(data)
        else:
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        try:
            self._decoder.feed(data)
        except Exception as exc:  # noqa: BLE001 - a broken frame ends the channel
            structlog.get_logger().warning("skyward.channel_read_failed", node=self._label, error=repr(exc))
            self._resume = None  # nothing to come back to: the stream itself is broken
            self._report(exc)
            if self._chan is not None:
                self._chan.close()

    def _on_stderr(self, data: bytes) -> None:
        self._pending_line += data
        *lines, rest = bytes(self._pending_line).split(b"\n")
        self._pending_line = bytearray(rest)
        for line in lines:
            self._stderr_line(line)
        if len(self._pending_line) > STDERR_TAIL:  # no control line is this long: a program's output
            self._stderr_line(bytes(self._pending_line))
            self._pending_line.clear()

    def _stderr_line(self, line: bytes) -> None:
        if self._pid is None:
            with contextlib.suppress(ValueError):
                self._pid = int(line.strip())
                return
        if self._resume is not None and line.startswith(MARK):
            self._keeper_said(line[len(MARK) :].decode(errors="replace"))
            return
        self._stderr += line + b"\n"
        if len(self._stderr) > STDERR_TAIL:
            del self._stderr[: len(self._stderr) - STDERR_TAIL]

    def _keeper_said(self, what: str) -> None:
        name, _, value = what.partition(":")
        if name == "acked" and self._writer is not None and self._writer.log is not None:
            self._writer.log.acked(int(value))
        elif name == "resume":
            self._keeper_up = True
            if self._attached is not None and not self._attached.done():
                self._attached.set_result(int(value))
        elif name == "exit":
            self._exited = True
        elif self._attached is not None and not self._attached.done():  # gone, refused
            self._attached.set_exception(KeeperGone(f"the worker's keeper is gone ({what})"))

    def _acknowledge_soon(self) -> None:
        if self._received - self._acked >= ACK_EVERY:
            self._acknowledge()
        elif self._ack_timer is None:
            self._ack_timer = asyncio.get_running_loop().call_later(ACK_DELAY, self._acknowledge)

    def _acknowledge(self) -> None:
        """Tell the keeper what arrived, so that it keeps no more than what may still be lost."""
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        if self._received != self._acked and not self._closed and self._outbox is not None:
            self._acked = self._received
            self._outbox.send([ack_frame(self._received)])

    def _on_lost(self, exc: BaseException | None) -> None:
        if self._reattach is not None:  # a channel that was attaching: the attempt failed
            if self._attached is not None and not self._attached.done():
                self._attached.set_exception(ConnectionError(f"the new channel closed ({exc!r})"))
            return
        self._gone.set()
        if self._can_reattach():
            assert self._writer is not None
            self._writer.detach()
            self._gone.clear()
            self._reattach = asyncio.get_running_loop().create_task(self._come_back(exc))
            return
        self._lost(exc)

    def _lost(self, exc: BaseException | None) -> None:
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

    # -- coming back -------------------------------------------------------------------------------

    def _can_reattach(self) -> bool:
        resume = self._resume
        return (
            resume is not None and resume.grace > 0 and self._keeper_up and not self._exited
            and not self._closed and self._reattach is None and self._kill_task is None
        )

    async def _come_back(self, exc: BaseException | None) -> None:
        """Attach a new channel to the keeper, with backoff, until the grace period ends."""
        assert self._resume is not None
        log = structlog.get_logger()
        loop = asyncio.get_running_loop()
        grace = self._resume.grace
        deadline = loop.time() + grace
        log.warning("skyward.link_lost", node=self._label, error=repr(exc), grace=grace)
        pause = FIRST_PAUSE
        why = f"the link stayed down past its grace period ({grace:g}s, the pool's ttl)"
        while not self._closed and loop.time() < deadline:
            try:
                async with asyncio.timeout(deadline - loop.time()):
                    await self._attach_once(deadline - loop.time())
            except (OSError, asyncssh.Error, ConnectionError) as error:
                if isinstance(error, TimeoutError) and loop.time() >= deadline:
                    break
                exc = error
                if isinstance(error, KeeperGone) or is_permanent(error):
                    why = "it could not come back"  # no keeper to come back to, a changed host key
                    break
                log.info("skyward.link_retry", node=self._label, error=str(error), wait=pause)
                await asyncio.sleep(min(pause, max(deadline - loop.time(), 0)))
                pause = min(pause * 2, MAX_PAUSE)
                continue
            self.reattached += 1
            self._reattach = None
            log.info("skyward.link_reattached", node=self._label, pid=self._pid)
            return
        self._reattach = None
        self._gone.set()
        if not self._closed:
            self._lost(ConnectionError(f"{self._label or 'the node'} is lost: {why} ({exc!r})"))

    async def _attach_once(self, left: float) -> None:
        assert self._resume is not None and self._writer is not None
        conn = await self._resume.reconnect(left)
        self._conn = conn
        self._attached = asyncio.get_running_loop().create_future()
        session = _Session(self)
        self._session = session
        chan: Any = None
        try:
            command = self._resume.command
            chan, _ = await conn.create_session(lambda: session, command, encoding=None, window=WINDOW)
            chan.write(greeting(self._received))
            keeper_has = await asyncio.wait_for(asyncio.shield(self._attached), ATTACH_TIMEOUT)
        except BaseException:
            self._session = None  # whatever that channel says later is not heard
            if chan is not None:
                chan.close()
            raise
        self._chan = chan
        self._writer.attach(chan, keeper_has)
        self._outbox.resume()

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
        if self._reattach is not None:  # the link is down: the keeper ends the worker after its grace
            self._closed = True
            self._reattach.cancel()
            return
        if not self._closed:
            with contextlib.suppress(Exception):
                self.send_parts(encode(Kind.SHUTDOWN, 0))
                if self._resume is not None:
                    self.send_parts([end_frame()])
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

        On a dead connection there is nothing to run: the keeper ends the worker once its grace
        period passes without the client (a worker without a keeper sees EOF on its stdin and
        exits); the provider also kills leftovers by pid file on reconnect.
        """
        if self._pid is not None:
            command = f"kill -9 -- -{self._pid} 2>/dev/null; kill -9 {self._pid} 2>/dev/null; true"
        elif self._pid_file:
            command = kill_command(self._pid_file)
        else:
            command = ""
        if command and self._resume is not None and self._pid_file:
            command += "; " + kill_command(keeper_pid_file(self._pid_file))  # nothing left to keep
        if command and not self._gone.is_set() and not self._conn.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.run(command, check=False), 10)
        if self._chan is not None:
            self._chan.close()


class KeeperGone(ConnectionError):
    """The worker's keeper is not on the node any more: there is nothing to come back to."""
