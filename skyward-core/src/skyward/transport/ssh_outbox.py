"""What an SSH channel writes, in order: bursts of frames joined, large buffers fed as sent.

Two costs of asyncssh shaped this (py-spy on the client, loopback sshd hosts):

- Every SSH packet is two socket writes (asyncssh puts an empty IGNORE packet before each one),
  and each wakes sshd. A pump that placed 50 tasks of a `map` wrote each as its own packet: the
  loop thread spent ~60 us a task in `send`. Frames sent after the first of a loop iteration are
  therefore held to its end and written together (`send`); the first leaves at once, so a lone
  task waits for nothing.
- `chan.write` copies what it is given into one bytearray, then cuts packets off its front: a
  100 MB argument was copied whole per node before its first byte left, and held in memory once
  more per node. Large buffers are fed in `CHUNK` slices instead, each when asyncssh has sent
  what it holds down to its low water mark (`pause`, `resume`), so at most `HIGH_WATER` bytes
  per channel wait in it, and the copies overlap the sending.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

#: Frame parts smaller than this are joined into one write (one SSH packet).
COALESCE = 64 * 1024
#: Large buffers are handed to asyncssh in slices of this size.
CHUNK = 4 * 1024 * 1024
#: asyncssh's buffer limits for a channel: it pauses us above the high mark and resumes us at
#: the low one. Alternating A/B runs of 100 MB (to one node; to each of 2): whole writes 565 and
#: 262 MB/s; 4/16/4 MiB (slice, high, low) 735 and 365; 1/4/1 MiB starved the window, 481 and 323.
HIGH_WATER = 4 * CHUNK
LOW_WATER = CHUNK


class Outbox:
    """The writes of one channel (loop thread only), in the order they were sent."""

    def __init__(self, chan: Any, on_error: Callable[[BaseException], None]) -> None:
        self._chan = chan
        self._on_error = on_error
        #: Slices not handed to asyncssh yet, in order.
        self._queue: deque[Any] = deque()
        #: Frames sent after the first of this loop iteration; None when none was sent yet.
        self._held: list[Any] | None = None
        self._paused = False
        self._flushing = False
        self._drained: asyncio.Event | None = None
        self._loop_thread = threading.get_ident()  # made on the loop's thread, which owns it
        chan.set_write_buffer_limits(HIGH_WATER, LOW_WATER)

    def send(self, parts: list[Any]) -> None:
        """Write `parts` now if nothing was sent in this loop iteration, else at its end.

        A caller's thread sending while the loop waits (`LoopThread.run_here`) is no loop
        iteration: nothing will follow its frames to be joined with them, so they go at once,
        after whatever an iteration still holds."""
        held = self._held
        if held is not None:
            held.extend(parts)
            return
        if threading.get_ident() != self._loop_thread:
            self._write(parts)
            return
        self._held = []
        asyncio.get_running_loop().call_soon(self.release)
        self._write(parts)

    def release(self) -> None:
        """Write what was held for the end of this iteration (now, if it has not ended)."""
        held, self._held = self._held, None
        if held:
            self._write(held)

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._flush()

    def clear(self) -> None:
        """Drop what was not written (the channel is gone)."""
        self._queue.clear()
        self._held = None
        if self._drained is not None:
            self._drained.set()

    async def drained(self, timeout: float) -> bool:
        """Wait until every slice is in asyncssh's hands (True), or `timeout` passed (False)."""
        self.release()
        if not self._queue:
            return True
        self._drained = asyncio.Event()
        try:
            await asyncio.wait_for(self._drained.wait(), timeout)
        except TimeoutError:
            return False
        return not self._queue

    def _write(self, parts: list[Any]) -> None:
        queue = self._queue
        small = bytearray()
        for part in parts:
            if len(part) < COALESCE:
                small += part  # one SSH packet for a frame's header and body, not two
                continue
            if small:
                queue.append(small)
                small = bytearray()
            view = memoryview(part).cast("B")
            queue.extend(view[start : start + CHUNK] for start in range(0, len(view), CHUNK))
        if small:
            queue.append(small)
        self._flush()

    def _flush(self) -> None:
        if self._flushing:
            return  # asyncssh resumed us from inside a write of ours: that loop goes on
        self._flushing = True
        queue, chan = self._queue, self._chan
        try:
            while queue and not self._paused:
                chan.write(queue.popleft())
        except (BrokenPipeError, OSError) as exc:
            self.clear()
            self._on_error(exc)
        finally:
            self._flushing = False
        if not queue and self._drained is not None:
            self._drained.set()
