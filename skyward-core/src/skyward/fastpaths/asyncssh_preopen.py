"""Session channels opened ahead of their exec requests (asyncssh internals).

A command on a new SSH channel waits two round trips before it runs: the channel's open, then its
exec request; asyncssh sends the second only with the command in hand. A pool's start knows, as
soon as it has logged in, that it will run commands there (the bootstrap, the worker's start),
but not what they are until it has rendered them (tens of milliseconds, more on a loaded client).
`preopen(conn, windows)` opens a session channel per receive window given (None: asyncssh's
default) at once, and the connection's next plain exec requests with that window
(`create_session(factory, command, encoding=None[, window=...])`) take them, so each waits only
for its exec request: the open's round trip passes while the client renders.

Used only where asyncssh's internals are as this module expects (`detect`), and not at all with
`SKYWARD_FAST_PATHS=off`: then every request opens its own channel, as asyncssh does. A channel
that could not be opened is skipped (the request opens its own); one never taken is closed with
its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from skyward import fastpaths

__all__ = ["NAME", "detect", "preopen"]

NAME = "asyncssh-preopen"
#: The attribute holding a connection's channels opened ahead ((window, task) pairs).
_SPARES = "_skyward_spares"

log = structlog.get_logger(__name__)


def detect(conn: Any) -> bool:
    """Whether `conn` may open channels ahead: fast paths on, and asyncssh's channel and
    connection internals as expected."""
    if not fastpaths.enabled(NAME):
        return False
    try:
        from asyncssh.channel import SSHClientChannel
    except ImportError:
        return False
    channel_ok = all(
        hasattr(SSHClientChannel, name) for name in ("_open", "_make_request", "_start_reading")
    )
    options = getattr(conn, "_options", None)
    conn_ok = all(hasattr(conn, name) for name in ("_update_recv_pktlen", "_loop", "create_task")) and all(
        hasattr(options, name) for name in ("window", "max_pktsize")
    )
    if not (channel_ok and conn_ok and hasattr(conn, "_utf8_decode_errors")):
        log.info("fast path not used", fast_path=NAME, missing="asyncssh channel internals")
        return False
    return True


def preopen(conn: Any, windows: tuple[int | None, ...]) -> bool:
    """Open a session channel on `conn` now per receive window in `windows` (None: the default),
    for its next plain exec requests (the module's docstring). False where it is not used."""
    if not windows or not detect(conn):
        return False
    spares: list[tuple[int, asyncio.Task[Any]]] | None = getattr(conn, _SPARES, None)
    if spares is None:
        spares = []
        setattr(conn, _SPARES, spares)
        conn.create_session = _taking(conn, spares, conn.create_session)
    for window in windows:
        size = conn._options.window if window is None else window
        task = asyncio.ensure_future(_open(conn, size))
        task.add_done_callback(_quiet)
        spares.append((size, task))
    return True


def _quiet(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # a spare that failed to open is skipped, never reported as unretrieved


async def _open(conn: Any, window: int) -> Any:
    """A session channel, open and waiting for its request (as `SSHClientChannel.create` opens it)."""
    from asyncssh.channel import SSHClientChannel

    options = conn._options
    conn._update_recv_pktlen(options.max_pktsize)
    chan = SSHClientChannel(
        conn, conn._loop, conn._utf8_decode_errors, None, "strict", window, options.max_pktsize
    )
    packet = await chan._open(b"session")
    packet.check_end()
    return chan


def _taking(conn: Any, spares: list[tuple[int, asyncio.Task[Any]]], create_session: Any) -> Any:
    """`conn.create_session`, taking a channel opened ahead for a plain exec request."""

    async def create(factory: Any, command: Any = (), **kwargs: Any) -> Any:
        window = kwargs.get("window", conn._options.window)
        plain = isinstance(command, str) and command and set(kwargs) <= {"encoding", "window"}
        while plain and kwargs.get("encoding", "") is None:
            task = next((t for size, t in spares if size == window), None)
            if task is None:
                break
            spares[:] = [(size, t) for size, t in spares if t is not task]
            with contextlib.suppress(Exception):
                chan = await task
                if not conn.is_closed():
                    return await _exec(chan, factory, command)
        return await create_session(factory, command, **kwargs)

    return create


async def _exec(chan: Any, factory: Any, command: str) -> tuple[Any, Any]:
    """Run `command` on a channel opened ahead: the rest of `SSHClientChannel.create`."""
    from asyncssh.constants import OPEN_REQUEST_SESSION_FAILED
    from asyncssh.misc import ChannelOpenError
    from asyncssh.packet import String

    session = factory()
    chan._session = session
    session.connection_made(chan)
    chan._command = command
    if not await chan._make_request(b"exec", String(command)):
        chan.close()
        raise ChannelOpenError(OPEN_REQUEST_SESSION_FAILED, "Session request failed")
    session.session_started()
    chan._conn.create_task(chan._start_reading(), chan.logger)
    return chan, session
