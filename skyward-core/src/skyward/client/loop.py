"""The bridge between the synchronous public API and the asyncio loop that does the work.

One daemon thread runs one event loop per Session (a lone `Compute` has its own). Every public call
hands a coroutine or callback to it; nothing in the loop ever blocks on the user's thread.

A callback may also run on the caller's own thread, while the loop thread waits (`run_here`): the
loop thread holds `LoopThread.turn` whenever it is not inside its selector's `select`, so whoever
else holds it knows the loop runs nothing meanwhile and may do what a loop callback does. That
spares a lone task the hand-off to the loop thread (a wake-up through the loop's self-pipe and a
GIL switch, before anything is sent): over SSH, whose channels belong to the loop, that hop was a
tenth of a no-op's round trip.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class _TurnTakingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The loop's selector: the loop thread gives up `turn` only while it waits for events."""

    def __init__(self, turn: threading.Lock) -> None:
        super().__init__()
        self._turn = turn

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self._turn.release()
        try:
            return super().select(timeout)
        finally:
            self._turn.acquire()


class LoopThread:
    def __init__(self, name: str = "skyward-loop") -> None:
        #: Held by the loop thread except while it waits for events (see the module's docstring).
        self.turn = threading.Lock()
        self.loop = asyncio.SelectorEventLoop(_TurnTakingSelector(self.turn))
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.turn.acquire()  # released by the loop thread's first select
        #: The thread running a callback here (`run_here`), which acts as the loop thread meanwhile.
        self._here: int | None = None
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.turn.release()

    def run(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        """Run a coroutine on the loop and wait for it here."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)  # type: ignore[arg-type]

    def is_current(self) -> bool:
        """Whether the calling thread is this loop's thread, or runs a loop callback (`run_here`):
        either way, waiting there for the loop would wait for ever."""
        return threading.current_thread() is self._thread or self._here == threading.get_ident()

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule a plain callback on the loop (thread-safe, returns at once)."""
        self.loop.call_soon_threadsafe(fn, *args)

    def run_here(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run the loop callback `fn(*args)` on this thread now, while the loop thread waits for its
        turn. False (nothing ran) on the loop thread itself or inside another `run_here` (an event
        handler `fn` calls), when the loop is not running, and while it has callbacks queued,
        which `fn` would overtake.

        `fn` sees this loop as the running one, and may do what a callback does that does not wait
        (send on a channel, schedule callbacks and timers); an exception it raises reaches this
        caller. The loop wakes afterwards only if `fn` gave it something to do sooner than it would
        have woken anyway. Whatever the loop reads next (a task's answer) finds `fn`'s work done.
        """
        loop = self.loop
        if self.is_current():
            return False
        with self.turn:
            # asyncio's own queues: private, but unchanged for a decade; without them, do not run here.
            ready, timers = getattr(loop, "_ready", None), getattr(loop, "_scheduled", None)
            if not loop.is_running() or ready is None or timers is None or ready:
                return False  # stopped (its thread gave the turn back on the way out), or not idle
            nearest = timers[0] if timers else None
            outer = asyncio.events._get_running_loop()
            asyncio.events._set_running_loop(loop)
            self._here = threading.get_ident()
            try:
                fn(*args)
            finally:
                self._here = None
                asyncio.events._set_running_loop(outer)
                if ready or (timers and timers[0] is not nearest):
                    loop.call_soon_threadsafe(_nothing)  # wake it: it has a callback or a nearer timer
        return True

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


def _nothing() -> None:
    """A callback that only wakes the loop (`LoopThread.run_here`)."""
