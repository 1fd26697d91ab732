"""The reply lane: a second pipe from a Local worker, for the answer to one synchronous call.

A lone `f() >> pool` on an idle node is the latency case. Through the main pipe its answer
takes two hops on the client: the loop thread wakes to read it, then wakes the caller. Here the
caller writes the task (as a `Kind.CALL` frame) and then reads its answer itself from this lane,
so the loop never wakes for it. On the worker, the answer to a CALL goes to the lane unless the
task wrote anything on the main pipe meanwhile (what it printed): then the answer follows that
output on the main pipe, and the lane carries only `Kind.ELSEWHERE`, so the caller never sees a
result before the output the task printed first.

One caller at a time holds a lane (`try_acquire`), so the lane only ever carries the answer to
the call in flight. A caller that stops reading before the answer (its time limit passed, an
interrupt, the worker died) hands the lane to the pool's loop (`adopt`), which reads it from where
the caller left off, frames half-read included, and releases it once that answer is in.

A caller polls the lane without sleeping for a moment (`SPIN`) before it blocks. A short task's
answer is usually back within that time, and a thread that never slept runs the rest of the call
on warm caches: on a virtual machine, a vCPU that halts while its thread sleeps comes back to cold
caches, and the same client code then takes two to four times as long (see "Where latency stops"
in docs/architecture.md). On a single CPU, polling would only hold up the worker, so it is off.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from skyward.transport import shm
from skyward.wire import Frame, FrameDecoder

if TYPE_CHECKING:
    import asyncio

#: The environment variable naming the lane's descriptor in the worker.
ENV = "SKYWARD_REPLY_FD"
#: What a worker writes first on its lane: a descriptor the client did not give it fails the check.
GREETING = b"skyward-reply-lane\n"


def _usable_cpus() -> int:
    getaffinity = getattr(os, "sched_getaffinity", None)  # Linux; macOS has only the count
    return len(getaffinity(0)) if getaffinity is not None else os.cpu_count() or 1


#: How long a caller polls its lane before it sleeps (seconds): a short task's whole round trip.
SPIN = 100e-6 if _usable_cpus() > 1 else 0.0


def open_lane(fd: int) -> ReplyLane | None:
    """The lane on `fd` if its worker greeted on it (the greeting was written before READY);
    else None, with `fd` closed."""
    greeting = b""
    try:
        while len(greeting) < len(GREETING) and select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, len(GREETING) - len(greeting))
            if not chunk:
                break
            greeting += chunk
    except OSError:
        pass
    if greeting != GREETING:
        with contextlib.suppress(OSError):
            os.close(fd)
        return None
    return ReplyLane(fd)


class ReplyLane:
    """The client's read end of one worker's reply pipe (blocking reads)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.Lock()
        self._frames: deque[Frame] = deque()
        self._decoder = FrameDecoder(self._frames.append, stage_size=64 * 1024, shm=shm.open_segment)
        self._poll = select.poll()  # registered once: cheaper per call than select()
        self._poll.register(fd, select.POLLIN)
        #: The worker has closed its end (it exited): nothing more will come.
        self.ended = False
        self._closing = False
        self._closed = False

    def try_acquire(self) -> bool:
        """Take the lane for one call; False if another call holds it or it is closed."""
        if self.ended or self._closing:
            return False
        if not self._lock.acquire(blocking=False):
            return False
        if self._closing:  # closed between the check and the lock
            self._lock.release()
            return False
        return True

    def release(self) -> None:
        """Give the lane back after its answer; the last holder closes a lane closed meanwhile."""
        if self._closing:
            self._close_fd()
        self._lock.release()

    def read(self, timeout: float | None = None) -> Frame | None:
        """The next frame, read on this thread; None at end of file, or once `timeout` has passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        spin = SPIN
        while not self._frames:
            if self.ended:
                return None
            if not (spin and self._poll_briefly(spin)):
                spin = 0.0  # not back yet: a longer task, so sleep from now on
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or not self._poll.poll(remaining * 1000):
                        return None
            if not self._read_once():
                return None
        return self._frames.popleft()

    def _poll_briefly(self, seconds: float) -> bool:
        """Whether the lane became readable within `seconds`, polled without sleeping."""
        poll = self._poll.poll
        clock = time.perf_counter
        until = clock() + seconds
        while True:
            if poll(0):
                return True
            if clock() >= until:
                return False

    def _read_once(self) -> bool:
        buffer = self._decoder.get_buffer()
        try:
            n = os.readv(self.fd, [buffer])
        except OSError:
            n = 0
        del buffer  # release the export: the decoder may grow its stage
        if n == 0:
            self.ended = True
            return False
        self._decoder.buffer_updated(n)
        return True

    def adopt(self, loop: asyncio.AbstractEventLoop, on_frame: Callable[[Frame], None], task_id: int) -> None:
        """Have `loop` read the lane from now on (loop thread), passing frames to `on_frame`, until
        the answer to `task_id` (or word that it went ELSEWHERE) is in; then release the lane."""

        def deliver() -> bool:
            while self._frames:
                frame = self._frames.popleft()
                on_frame(frame)
                if frame.id == task_id:
                    return True
            return False

        def on_readable() -> None:
            if self._read_once() and not deliver():
                return
            loop.remove_reader(self.fd)
            finish()

        def finish() -> None:
            if self.ended:
                self._close_fd()  # its worker is gone, and the node with it: the lane stays taken
            else:
                self.release()

        if deliver() or self.ended:
            finish()
        else:
            loop.add_reader(self.fd, on_readable)

    def close(self) -> None:
        """Close the read end now, or when the call holding the lane releases it (the loop thread
        must not close a descriptor another thread is blocked reading)."""
        self._closing = True
        if self._lock.acquire(blocking=False):
            try:
                self._close_fd()
            finally:
                self._lock.release()

    def _close_fd(self) -> None:
        if not self._closed:
            self._closed = True
            self.ended = True
            with contextlib.suppress(OSError):
                os.close(self.fd)
