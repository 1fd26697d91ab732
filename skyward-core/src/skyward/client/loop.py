"""The bridge between the synchronous public API and the asyncio loop that does the work.

One daemon thread runs one event loop per Session (a lone `Compute` has its own). Every public call
hands a coroutine or callback to it; nothing in the loop ever blocks on the user's thread.

A callback may also run on the caller's own thread, while the loop thread waits (`run_here`): the
loop thread holds `LoopThread.turn` whenever it is not inside its selector's `select`, so whoever
else holds it knows the loop runs nothing meanwhile and may do what a loop callback does. That
spares a lone task the hand-off to the loop thread (a wake-up through the loop's self-pipe and a
GIL switch, before anything is sent): over SSH, whose channels belong to the loop, that hop was a
tenth of a no-op's round trip.

A caller may also run the loop itself while it waits for a lone task's answer (`drive`): it takes
the turn and runs the loop's iterations until its task is done, so the answer wakes the thread
that waits for it, not the loop thread, which would then wake the caller (two wake-ups, each tens
of microseconds on a small VM). For that to pay, the loop thread must not sit in its own `select`
meanwhile, where the same answer would wake it too: after a caller stopped driving, the loop
thread leaves the sockets to the next caller for `PARK` seconds, watching only its self-pipe (what
other threads hand it) and its timers. A loop of `>>` keeps it parked; a pause longer than `PARK`
gives the sockets back to it. Whatever reaches a socket during a park waits at most `PARK`.

Both need asyncio's private internals (`skyward.fastpaths.asyncio_drive`): where they are missing,
or with `SKYWARD_FAST_PATHS=off`, `run_here`, `drive` and `send_and_drive` refuse, the selector
never gives up a turn, and every call goes through the loop thread (public asyncio only).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import select
import selectors
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from skyward.client import interrupts
from skyward.fastpaths import asyncio_drive

T = TypeVar("T")

#: How long the loop thread leaves the sockets to callers after one stopped driving the loop.
PARK = 0.002
#: Loop iterations a caller runs after its task is done, to leave no callback waiting on a park.
SETTLE_ITERATIONS = 3
#: A drive this long is a long task's wait: the parked loop thread then looks every
#: `LONG_DRIVE_POLL` instead of every `PARK`, and the caller wakes it when it stops driving.
LONG_DRIVE = 0.05
LONG_DRIVE_POLL = 0.5
#: How often a caller waiting for the turn looks whether another caller drives the loop.
TURN_POLL = 0.001
#: asyncio's own bound on a select's timeout (epoll takes milliseconds as a C int).
MAXIMUM_SELECT_TIMEOUT = 24 * 3600


class _TurnTakingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The loop's selector: the loop thread gives up `turn` only while it waits for events (or
    parks); a caller driving the loop (`LoopThread.drive`) keeps it."""

    def __init__(self, owner: LoopThread) -> None:
        super().__init__()
        self._owner = owner

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        owner = self._owner
        if owner._internals is None or owner._driver == threading.get_ident():
            return super().select(timeout)
        parks = owner._drive_ended is not None and timeout != 0  # a select(0) sleeps in nothing
        owner._sleeps_until = math.inf if timeout is None or parks else time.monotonic() + timeout
        taken = owner._turns_taken
        events: list[tuple[selectors.SelectorKey, int]] = []
        owner.turn.release()
        try:
            if parks:
                timeout = owner._park()
            if timeout != 0 or not parks:  # after a park, 0: a timer is due, run it first
                events = super().select(timeout)
        finally:
            owner.turn.acquire()
        if owner._turns_taken != taken:
            # A caller ran the loop meanwhile, and may have removed a reader whose descriptor
            # was then reused: asyncio, handed the old reader's event, would remove the new one.
            # Readiness is level-triggered, so what is still ready comes again at the next select.
            return []
        return events


class LoopThread:
    def __init__(self, name: str = "skyward-loop") -> None:
        #: Held by the loop thread except while it waits for events (see the module's docstring).
        self.turn = threading.Lock()
        #: The thread running a callback here (`run_here`), which acts as the loop thread meanwhile.
        self._here: int | None = None
        #: The caller running the loop's iterations (`drive`), when one does.
        self._driver: int | None = None
        #: When a caller last stopped driving (None: none ever did, so the loop thread never parks),
        #: and when the current drive began.
        self._drive_ended: float | None = None
        self._drive_began = 0.0
        #: Callers waiting for an answer without driving (one drives already): no park meanwhile.
        self._waiting = 0
        self._waiting_lock = threading.Lock()
        #: How many times a caller took the turn (`_take_turn`).
        self._turns_taken = 0
        self._self_pipe: select.poll | None = None
        #: Until when (time.monotonic) the loop thread sleeps unless woken: a caller that armed a
        #: nearer timer or queued a callback wakes it (`_wake_if_needed`).
        self._sleeps_until = math.inf
        self.loop = asyncio.SelectorEventLoop(_TurnTakingSelector(self))
        #: What a caller needs to run the loop (None: only the loop thread runs it).
        self._internals = asyncio_drive.detect(self.loop)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.turn.acquire()  # released by the loop thread's first select
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self._self_pipe = _self_pipe_poll(self._internals)
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
        internals = self._internals
        if internals is None or self.is_current() or not self._take_turn():
            return False  # no fast path, or another caller drives the loop: queue instead
        main = interrupts.enter(self._wake)
        try:
            if not self.loop.is_running() or internals.ready():
                return False  # stopped (its thread gave the turn back on the way out), or not idle
            outer = internals.pose()
            self._here = threading.get_ident()
            try:
                fn(*args)
            finally:
                self._here = None
                internals.unpose(outer)
                self._wake_if_needed(internals)
        finally:
            self.turn.release()
            interrupts.leave(main)
        return True

    def wait_for(self, done: Callable[[], bool], wait: Callable[[], T]) -> T:
        """`wait()` for a lone task's outcome, driving the loop meanwhile where this thread can
        (`drive`); `done()`: whether the outcome is in, so `wait()` returns at once."""
        if self.drive(done):
            return wait()
        with self._waiting_lock:
            self._waiting += 1
        try:
            if self._driver is not None or self._drive_ended is not None:
                self._wake()  # end a park: this answer needs a watcher
            return wait()
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def drive(self, done: Callable[[], bool]) -> bool:
        """Run the loop's iterations on this thread until `done()` (True), while the loop thread
        waits for its turn. False, with nothing run, where this thread cannot: on the loop's own
        thread or inside a callback, while the loop thread is busy or another caller drives, when
        the loop is stopped or stopping; and False once the loop starts stopping or a signal waits
        for the end of loop work (`interrupts`), which is raised here when driving ends.

        Callbacks, event handlers among them, run here meanwhile, and `is_current` is true for
        them: a handler that dispatches and waits is refused, as on the loop thread."""
        if done():
            return True
        return bool(self.send_and_drive(None, (), done))

    def send_and_drive(self, send: Callable[..., Any] | None, args: tuple[Any, ...],
                       done: Callable[[], bool]) -> bool | None:
        """`run_here(send, *args)`, then `drive(done)`, in one turn: a lone task is sent and its
        answer awaited with the turn taken once (the two calls took it twice, ~8 us of a ~500 us
        round trip over SSH). None, with nothing run, where `run_here` would refuse (the caller
        then queues `send` itself); else whether `done()`. An exception `send` raises reaches
        the caller, with no driving."""
        internals = self._internals
        if internals is None or self.is_current() or not self._take_turn():
            return None
        main = interrupts.enter(self._wake)
        try:
            run_once, ready = internals.run_once, internals.ready()
            if not self.loop.is_running() or internals.stopping():
                return None
            if send is not None and ready:
                return None  # `send` would overtake the callbacks queued before it
            outer = internals.pose()
            self._here = me = threading.get_ident()
            driving = False
            try:
                if send is not None:
                    send(*args)
                self._drive_began = time.monotonic()
                self._driver = me
                driving = True
                while not done() and not internals.stopping() and not interrupts.held():
                    run_once()
                for _ in range(SETTLE_ITERATIONS):
                    if not ready or internals.stopping():
                        break
                    run_once()  # callbacks the answer queued (with nothing to wait for in select)
            finally:
                self._driver = self._here = None
                internals.unpose(outer)
                if driving:
                    self._drive_ended = ended = time.monotonic()
                    if ended - self._drive_began >= LONG_DRIVE:
                        self._wake()  # the parked loop thread may sleep `LONG_DRIVE_POLL`: it watches now
                    else:
                        self._wake_if_needed(internals)
                else:
                    self._wake_if_needed(internals)
        finally:
            self.turn.release()
            interrupts.leave(main)
        return done()

    def _take_turn(self) -> bool:
        """Take the turn: wait while the loop thread runs (it soon waits or parks again), but not
        while another caller drives the loop, which may last as long as that caller's task."""
        turn = self.turn
        while not turn.acquire(timeout=TURN_POLL):
            if self._driver is not None or not self._thread.is_alive():
                return False
        self._turns_taken += 1  # the loop thread's events from before are stale now (`select`)
        return True

    def _wake_if_needed(self, internals: asyncio_drive.LoopInternals) -> None:
        """After a caller ran loop work: wake the loop thread if that work queued a callback or
        armed a timer due before the loop thread would wake by itself."""
        timers = internals.timers()
        if internals.ready() or (timers and timers[0].when() < self._sleeps_until):
            self.loop.call_soon_threadsafe(_nothing)

    def _park(self) -> float | None:
        """On the loop thread, without the turn: while a caller drives the loop, and for `PARK`
        after the last one stopped, wait only for the self-pipe (another thread's callback) and
        the nearest timer, not for the sockets. The timeout left for the full select after it:
        0 when a timer is due, None when there is none."""
        pipe, internals = self._self_pipe, self._internals
        assert internals is not None  # only a drive, which needs them, starts a park
        while not self._waiting:
            # Callers arm timers meanwhile (they hold the turn, this thread does not). So first say
            # "asleep for ever", which makes a caller that arms one from now on wake this thread,
            # then read the nearest timer, then say until when: no timer is missed either way.
            self._sleeps_until = math.inf
            now = time.monotonic()
            ended = self._drive_ended
            if self._driver is None and ended is not None:
                left = ended + PARK - now
                if left <= 0:
                    break
            else:  # a caller drives: look again when its drive may have ended
                left = PARK if now - self._drive_began < LONG_DRIVE else LONG_DRIVE_POLL
            timers = internals.timers()  # read anew: a caller's iteration may replace the heap
            if timers:
                left = min(left, timers[0].when() - now)
                if left <= 0:
                    return 0
            self._sleeps_until = now + left
            if pipe is None:
                time.sleep(left)
            elif pipe.poll(math.ceil(left * 1000)):
                break  # another thread handed the loop something
        self._sleeps_until = math.inf  # the same order for the full select's timeout
        timers = internals.timers()
        if not timers:
            return None
        timeout = min(max(0.0, timers[0].when() - time.monotonic()), MAXIMUM_SELECT_TIMEOUT)
        self._sleeps_until = time.monotonic() + timeout
        return timeout

    def _wake(self) -> None:
        """Make the loop look again (a signal held for the end of a drive stops it; a parked loop
        thread watches the sockets again)."""
        with contextlib.suppress(RuntimeError):  # closed meanwhile (the pool stopped): nothing to wake
            self.loop.call_soon_threadsafe(_nothing)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()


def _nothing() -> None:
    """A callback that only wakes the loop (`LoopThread.run_here`)."""


def _self_pipe_poll(internals: asyncio_drive.LoopInternals | None) -> select.poll | None:
    """A poll object on the loop's self-pipe, which `call_soon_threadsafe` writes to: a parked
    loop thread wakes for what other threads hand it. None where the pipe or poll is missing
    (private to asyncio): a park then sleeps, and such a callback waits at most `PARK`."""
    sock = internals.self_pipe() if internals is not None else None
    if sock is None or not hasattr(select, "poll"):
        return None
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return poller
