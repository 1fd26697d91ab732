"""The asyncio internals a caller needs to act as the loop thread (`client/loop.py`'s `LoopThread`).

`LoopThread.run_here` and `send_and_drive` run loop callbacks, and the loop's own iterations, on a
caller's thread while the loop thread waits for its turn. asyncio offers no public way to do
either: they need the loop's queue of ready callbacks and its timer heap (to refuse when the loop
is not idle, and to wake it for what the caller armed), one iteration of the loop (`_run_once`),
its stopping flag, and the running-loop slot of the current thread. A parked loop thread also
polls the loop's self-pipe (`_ssock`), which `call_soon_threadsafe` writes to.

`detect` looks for all of them on the loop at hand. Where any is missing (another event loop, a
future asyncio), or `SKYWARD_FAST_PATHS=off`, it returns None and `LoopThread` uses only public
asyncio: each call handed to the loop thread with `call_soon_threadsafe`, each answer awaited on a
future. The internals are read from the loop each time (`_run_once` replaces `_scheduled` when it
prunes cancelled timers), never copied.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import structlog

from skyward import fastpaths

__all__ = ["NAME", "LoopInternals", "detect"]

NAME = "asyncio-drive"
#: What a loop must have for a caller to drive it.
LOOP_ATTRIBUTES = ("_run_once", "_ready", "_scheduled", "_stopping")
#: What the asyncio.events module must have for a caller to pose as the loop's thread.
EVENTS_ATTRIBUTES = ("_get_running_loop", "_set_running_loop")

log = structlog.get_logger(__name__)


class LoopInternals:
    """The private parts of one loop a caller uses to run it, read live from the loop."""

    __slots__ = ("loop", "run_once", "_get_running", "_set_running")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop: Any = loop
        #: One iteration: select with the timeout the timers allow, then run what is ready.
        self.run_once: Callable[[], None] = loop._run_once  # type: ignore[attr-defined]
        self._get_running = asyncio.events._get_running_loop
        self._set_running = asyncio.events._set_running_loop

    def ready(self) -> Any:
        """The queue of callbacks due now (a deque; empty: the loop is idle)."""
        return self.loop._ready

    def timers(self) -> list[Any]:
        """The heap of timers, nearest first."""
        return self.loop._scheduled  # type: ignore[no-any-return]

    def stopping(self) -> bool:
        """Whether `loop.stop()` was called: its next iteration is its last."""
        return bool(self.loop._stopping)

    def self_pipe(self) -> socket.socket | None:
        """The socket `call_soon_threadsafe` writes to, where the loop has one."""
        return getattr(self.loop, "_ssock", None)

    def pose(self) -> asyncio.AbstractEventLoop | None:
        """Make the loop this thread's running loop (so callbacks see it); the one it replaced."""
        outer = self._get_running()
        self._set_running(self.loop)
        return outer

    def unpose(self, outer: asyncio.AbstractEventLoop | None) -> None:
        self._set_running(outer)


def detect(loop: Any) -> LoopInternals | None:
    """The internals of `loop` a caller needs to drive it; None where any is missing or fast paths
    are off (`SKYWARD_FAST_PATHS`): the loop is then only used through public asyncio."""
    if not fastpaths.enabled(NAME):
        return None
    missing = [name for name in LOOP_ATTRIBUTES if not hasattr(loop, name)]
    missing += [f"asyncio.events.{name}" for name in EVENTS_ATTRIBUTES if not hasattr(asyncio.events, name)]
    if missing:
        log.info("fast path not used", fast_path=NAME, missing=missing)
        return None
    return LoopInternals(loop)
