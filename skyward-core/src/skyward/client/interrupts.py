"""Ctrl-C, and the pool's SIGTERM exit, wait while the main thread does the event loop's work.

A caller's thread may run the pool's event loop for a moment: it sends a lone task itself
(`LoopThread.run_here`), and runs the loop while it waits for the answer (`LoopThread.drive`).
Python raises KeyboardInterrupt in the main thread wherever it happens to be, and inside a loop
callback that would leave asyncssh's packet stream (an SSH packet sent, its sequence number not
counted) or asyncio's queues half-updated. While a pool is open, its handlers for SIGINT and
SIGTERM therefore hold such a signal while the main thread is inside loop work, wake the loop,
and run the handler that was there before (raising KeyboardInterrupt, for Ctrl-C) as soon as
that work is left: the same exception, at the next safe point.

Handlers are installed once per pool, not per call: `signal.signal` costs about 8 us here, a
tenth of what driving the loop saves a call.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

_MAIN = threading.main_thread().ident
#: How deep the main thread is in loop work (`enter`/`leave`), and how to wake the loop it runs.
_depth = [0]
_wake: list[Callable[[], None] | None] = [None]
#: Signals held for the end of loop work: (the handler they are for, the signal's number).
_held: list[tuple[Callable[..., Any], int]] = []
#: Our wrappers, by signal: (the wrapper, the handler it wraps, how many pools installed it).
_installed: dict[int, list[Any]] = {}


def enter(wake: Callable[[], None]) -> bool:
    """This thread starts loop work; True if it is the main thread (pass it to `leave`). `wake`
    makes the loop look again (a signal arriving meanwhile stops a `drive` promptly)."""
    if threading.get_ident() != _MAIN:
        return False
    _depth[0] += 1
    _wake[0] = wake
    return True


def leave(main: bool) -> None:
    """This thread left loop work: run the handlers of the signals held meanwhile (here, where a
    KeyboardInterrupt they raise breaks nothing)."""
    if not main:
        return
    _depth[0] -= 1
    if _depth[0] or not _held:
        return
    held = _held[:]
    _held.clear()
    for handler, signum in held:
        handler(signum, None)


def held() -> bool:
    """Whether a signal waits for the end of loop work (a driving caller then stops driving)."""
    return bool(_held)


def install(signum: int) -> None:
    """Hold `signum` during loop work while a pool is open (main thread only; a handler that is
    not a Python callable, such as SIG_IGN, is left as it is)."""
    if threading.get_ident() != _MAIN:
        return
    entry = _installed.get(signum)
    if entry is not None and signal.getsignal(signum) is entry[0]:
        entry[2] += 1
        return
    previous = signal.getsignal(signum)
    if not callable(previous):
        return

    def holding(number: int, frame: FrameType | None) -> None:
        if _depth[0] and threading.get_ident() == _MAIN:
            _held.append((previous, number))
            wake = _wake[0]
            if wake is not None:
                wake()
            return
        previous(number, frame)

    _installed[signum] = [holding, previous, 1]
    signal.signal(signum, holding)


def restore(signum: int) -> None:
    """Undo one `install`; the last one puts the earlier handler back, unless someone replaced
    ours meanwhile (theirs stays)."""
    entry = _installed.get(signum)
    if entry is None or threading.get_ident() != _MAIN:
        return
    entry[2] -= 1
    if entry[2] > 0:
        return
    del _installed[signum]
    if signal.getsignal(signum) is entry[0]:
        signal.signal(signum, entry[1])
