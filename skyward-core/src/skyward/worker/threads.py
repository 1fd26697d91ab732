"""The thread executor: task threads that take turns reading the channel.

One thread at a time reads frames, the reader. It handles control frames (a function, a cancel,
a credit, a ping) on the spot, in arrival order. What it does with a task depends on the worker's
slots:

- With one slot (the default), the reader runs the task itself, with no thread hand-off at all.
  Handing a task to another thread costs a lock hand-off and a GIL switch, which on a short task
  is most of the worker's share of a round trip. While it runs, nobody reads. A watcher thread
  checks every `TICK`, and once a task has run that long it makes an idle thread the reader, so
  cancels, pings and credits are read at most about two ticks late. The old reader finishes its
  task as an ordinary task thread.
- With more slots, or for a task that streams (which needs credits or items read while it runs),
  the reader hands the task to an idle thread.

At most `count` tasks run at once; a task that arrives while they are all busy waits in a backlog,
and the next thread to finish takes it. There are `count + 1` threads, so one is always free to
read.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from skyward.wire import Frame

#: How long the reader may run a task before an idle thread takes over reading (seconds).
TICK = 0.02

#: What a frame handler returns to end the serving (the client said SHUTDOWN).
STOP = object()
_READ = object()  # a job: become the reader


@attrs.define
class Job:
    """A task for a thread to run; `inline=False` when it must not hold up reading (streams).

    Not frozen: one is built per task, and a frozen class's `__init__` takes twice as long.
    """

    run: Callable[[], None]
    inline: bool = True


#: handle(frame) -> a Job, None once the frame is handled, or STOP.
Handler = Callable[[Frame], Any]


#: The longest a signal caught by another thread waits for the main thread to handle it.
SIGNAL_TICK = 0.5


class TaskThreads:
    def __init__(
        self,
        count: int,
        frames: Iterator[Frame],
        handle: Handler,
        on_pause: Callable[[], None] = lambda: None,
        name: str = "skyward-task",
    ) -> None:
        self._count = count
        # Called when the reader stops reading to run a long task, or stops being the reader.
        self._on_pause = on_pause
        self._inline_reader: int | None = None  # the thread id of the reader while it runs a task
        self._frames = frames
        self._handle = handle
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards the fields below
        self._running = 0
        self._backlog: deque[Job] = deque()
        self._paused_since: float | None = None  # the reader runs a task itself since then
        self._closed = False
        self.finished = threading.Event()  # set once the client closed the channel or said SHUTDOWN
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}-{i}", daemon=True) for i in range(count + 1)
        ]
        self._watcher = (
            threading.Thread(target=self._watch, name=f"{name}-watcher", daemon=True) if count == 1 else None
        )

    def start(self) -> TaskThreads:
        for thread in self._threads:
            thread.start()
        if self._watcher is not None:
            self._watcher.start()
        self._jobs.put(_READ)
        return self

    def wait(self) -> None:
        """Until the channel ends. The main thread waits in ticks: a signal the kernel handed to
        another thread (any thread may get a process's SIGTERM) runs its Python handler only when
        the main thread next executes bytecode, which an untimed wait would put off for ever."""
        while not self.finished.wait(SIGNAL_TICK):
            pass

    def on_reader(self) -> bool:
        """Whether this thread is the reader running a task: it reads again as soon as the task
        ends, so what the task sends may wait until the reader has nothing left to read."""
        return self._inline_reader == threading.get_ident()

    def release_reader(self) -> None:
        """Make another thread the reader now if the reader is running a task (any thread may ask).

        A task about to wait for an answer only a reader can receive (a collection's, see
        `skyward.collections.transport`) asks this first, rather than waiting for the watcher's
        tick; as when the watcher does it, the old reader finishes its task as a task thread.
        """
        if self._paused_since is None:  # the common case, read without the lock: nobody to replace
            return
        with self._lock:
            if self._paused_since is None:
                return
            self._paused_since = None
        self._jobs.put(_READ)
        self._on_pause()

    def shutdown(self) -> None:
        """Drop tasks not started yet (the client is gone or going); idle threads end."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._backlog.clear()
        for _ in self._threads:
            self._jobs.put(STOP)

    # -- threads ----------------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is STOP:
                return
            if job is _READ:
                self._read()
            else:
                self._work(job)

    def _work(self, job: Job | None) -> None:
        """Run `job`, then whatever waits in the backlog; give the slot back when none does."""
        while job is not None:
            _run(job)
            job = self._next_from_backlog()

    def _next_from_backlog(self) -> Job | None:
        with self._lock:
            if self._backlog and not self._closed:
                return self._backlog.popleft()
            self._running -= 1
            return None

    def _read(self) -> None:
        while True:
            job = self._next_job()
            if job is None:
                return
            self._inline_reader = threading.get_ident()
            try:
                _run(job)
            finally:
                self._inline_reader = None
            del job  # the task's arguments and result must not live on while this thread reads
            with self._lock:
                promoted = self._paused_since is None  # another thread reads now
                self._paused_since = None
                if not promoted:
                    self._running -= 1
            if promoted:
                self._on_pause()
                self._work(self._next_from_backlog())
                return

    def _next_job(self) -> Job | None:
        """Read and handle frames until one is a task this thread runs; None when it stops reading."""
        while True:
            frame = next(self._frames, None)
            if frame is None:
                job = STOP  # the client closed the channel
            else:
                try:
                    job = self._handle(frame)
                except Exception as exc:  # noqa: BLE001 - a frame we cannot handle ends the worker
                    _log().error("skyward.frame_failed", frame=repr(frame), error=repr(exc))
                    job = STOP
            if job is STOP:
                self.shutdown()
                self.finished.set()
                return None
            if job is None:
                continue
            with self._lock:
                if self._closed:
                    return None
                if self._running >= self._count:
                    self._backlog.append(job)
                    continue
                self._running += 1
                if self._watcher is not None and job.inline:
                    self._paused_since = time.monotonic()
                    return job
            self._jobs.put(job)  # an idle thread runs it

    def _watch(self) -> None:
        while not self._closed:
            time.sleep(TICK)
            with self._lock:
                since = self._paused_since
                if since is None or time.monotonic() - since < TICK:
                    continue
                self._paused_since = None
            self._jobs.put(_READ)
            self._on_pause()


def _run(job: Job) -> None:
    # Each task runs in its own copy of the context, so output routing and other context
    # variables set by one task never leak into the next on the same thread.
    try:
        contextvars.copy_context().run(job.run)
    except BaseException as exc:  # noqa: BLE001 - tasks report their own failures
        _log().warning("skyward.task_thread_error", error=repr(exc))


def _log() -> Any:
    # Imported on first use: structlog (with rich) takes a tenth of a second to import, which a
    # worker would otherwise pay at every start for a log line it almost never writes.
    import structlog

    return structlog.get_logger()
