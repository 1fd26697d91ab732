"""A pool's tasks as counts: started, done, failed, and a progress line's figures now and then.

The console shows tasks as counts (a progress line, a spinner's "3 task(s) running", the end
summary), never one by one unless the log level is DEBUG. Building a `TaskStarted` and a
`TaskCompleted` for each task only for the console to add one to a counter (and redraw the rich
spinner) cost a map of no-ops a fifth of its throughput piped and half on a terminal
(benchmarks/case_defaults.py), so a node counts a task here instead when nothing wants the task's
events (`EventBus.listens`), and the bus counts the task events it does carry: each task is
counted once, whichever way it went.

A task is one task however many times it runs: a task of a lost node (or of one a resize let go)
that runs again elsewhere is counted by its node as run again (`rerun`), which takes its earlier
start back and counts a retry, so it is started once and ended once. A task the pool ends without
an answer from its worker (a time limit, a lost node's task not retried, the pool's exit) is
counted as failed where its start was counted (`TaskState.report_end`): without either, such a
task stayed "running" after the pool had returned every result.

A bus's tally counts nothing until something reads it (`watch`): a pool without a console pays a
method call per task. Counts change on the pool's loop thread and on a synchronous call's own
thread, so they change under a lock; readers (the rich console's refresh thread) read them without
one, as plain ints. A progress line is due when `interval` seconds (by the task's clock) have
passed since the last one, counting from the first completion: the watchers get its figures,
outside the lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import attrs

__all__ = ["PROGRESS_INTERVAL", "Progress", "TaskTally"]

#: Seconds between two progress lines.
PROGRESS_INTERVAL = 5.0


@attrs.frozen
class Progress:
    """A progress line's figures: the totals, what is running, the rate since the last line, and
    the time they were counted at (epoch seconds)."""

    done: int
    failed: int
    running: int
    per_second: float
    at: float


class TaskTally:
    """How many tasks have started, ended well and failed, how many times one ran again; when the
    pool last became busy."""

    def __init__(self, interval: float = PROGRESS_INTERVAL, counting: bool = True) -> None:
        self.interval = interval
        #: Off until something reads the counts (`watch`): then every task is counted.
        self.counting = counting
        self.started = 0
        self.done = 0
        self.failed = 0
        #: How many times a started task was run again (its node was lost, or left the pool).
        self.retried = 0
        #: When the number of running tasks last rose from zero (epoch seconds).
        self.busy_since: float | None = None
        #: Called with a `Progress` when a line is due; replaced whole, so it is read without a lock.
        self._watchers: tuple[Callable[[Progress], None], ...] = ()
        self._mark_at: float | None = None
        self._mark_count = 0
        self._lock = threading.Lock()

    @property
    def running(self) -> int:
        return max(0, self.started - self.done - self.failed)

    # `acquire`/`release` rather than `with`: these run twice per task, and `with` costs 2.5x as much.

    def start(self, at: float | None = None) -> None:
        if not self.counting:
            return
        lock = self._lock
        lock.acquire()
        try:
            if self.started <= self.done + self.failed:
                self.busy_since = time.time() if at is None else at
            self.started += 1
        finally:
            lock.release()

    def rerun(self) -> None:
        """A started task is run again: its earlier start is taken back (the start of this run
        counts it), and a retry is counted. Without it a retried task counted as two started and
        one ended: "1 running" after every result was in."""
        if not self.counting:
            return
        with self._lock:
            self.retried += 1
            self.started = max(0, self.started - 1)

    def finish(self, success: bool, at: float | None = None) -> None:
        """Count a task's end; a success may make a progress line due (a failure is shown on its own)."""
        if not self.counting:
            return
        due = None
        lock = self._lock
        lock.acquire()
        try:
            if success:
                self.done += 1
            else:
                self.failed += 1
            self.started = max(self.started, self.done + self.failed)  # an end fed without its start
            if success and self._watchers:
                now = time.time() if at is None else at
                mark = self._mark_at
                if mark is None or now - mark >= self.interval:  # checked here: a call per task costs
                    due = self._progress(now)
        finally:
            lock.release()
        if due is not None:
            for watcher in self._watchers:
                watcher(due)

    def watch(self, on_progress: Callable[[Progress], None] | None = None) -> Callable[[], None]:
        """Count from now on, and call `on_progress` (if given) whenever a progress line is due;
        returns the function that stops the calls."""
        self.counting = True
        if on_progress is None:
            return lambda: None
        with self._lock:
            self._watchers = (*self._watchers, on_progress)

        def unwatch() -> None:
            with self._lock:
                self._watchers = tuple(w for w in self._watchers if w is not on_progress)

        return unwatch

    def _progress(self, now: float) -> Progress | None:
        if self._mark_at is None:  # the first completion starts the clock: a few tasks need no line
            self._mark_at, self._mark_count = now, 0
            return None
        elapsed = now - self._mark_at
        if elapsed < self.interval:
            return None
        ended = self.done + self.failed
        rate = (ended - self._mark_count) / elapsed
        self._mark_at, self._mark_count = now, ended
        return Progress(done=self.done, failed=self.failed, running=self.running, per_second=rate, at=now)
