"""Streams in both directions on the task channel.

Input: an iterator argument arrives as a `StreamRef`; `InputStream` pulls its items from the client
in small batches as the function reads. Output: a generator task sends YIELD frames while it holds
credits; the client grants more as its consumer reads, which bounds memory on both sides.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from skyward.wire import Kind

_END = object()


class InputStream:
    """The worker-side iterator for one client iterator argument."""

    def __init__(self, stream_id: int, send: Callable[..., None], batch: int = 16) -> None:
        self.stream_id = stream_id
        self._send = send
        self._batch = batch
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._outstanding = 0
        self._done = False

    def __iter__(self) -> InputStream:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        if self._outstanding == 0:
            self._send(Kind.PULL, self.stream_id, self._batch)
            self._outstanding = self._batch
        item = self._items.get()
        self._outstanding -= 1
        if item is _END:
            self._done = True
            raise StopIteration
        if isinstance(item, _Failure):
            self._done = True
            raise item.exc
        return item

    def deliver(self, item: Any) -> None:
        self._items.put(item)

    def finish(self, error: BaseException | None) -> None:
        self._items.put(_Failure(error) if error is not None else _END)


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class OutputCredits:
    """How many more items a generator task may send before the client reads them."""

    def __init__(self, window: int) -> None:
        self._credits = window
        self._cond = threading.Condition()
        self.cancelled = False

    def take(self) -> bool:
        """Wait for one credit; False once the client cancelled the stream."""
        with self._cond:
            while self._credits <= 0 and not self.cancelled:
                self._cond.wait()
            if self.cancelled:
                return False
            self._credits -= 1
            return True

    def grant(self, n: int) -> None:
        with self._cond:
            self._credits += n
            self._cond.notify_all()

    def cancel(self) -> None:
        with self._cond:
            self.cancelled = True
            self._cond.notify_all()
