"""The worker's end of the protocol: frames read from and written to private file descriptors."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from collections import deque

from skyward.wire import Frame, FrameDecoder, Kind, encode


class WorkerChannel:
    """Blocking frame I/O on raw descriptors; writes from many threads are serialised by a lock."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._ready: deque[Frame] = deque()
        self._decoder = FrameDecoder(self._ready.append)
        self._lock = threading.Lock()
        self.last_read = time.monotonic()  # when the client was last heard from (ttl watchdog)

    def send(self, kind: Kind, id: int = 0, payload: Any = None) -> None:
        parts = encode(kind, id, payload)
        with self._lock:
            _write_all(self._write_fd, parts)

    def frames(self):
        """Yield frames until the client closes the channel."""
        while True:
            while self._ready:
                yield self._ready.popleft()
            try:
                n = os.readv(self._read_fd, [self._decoder.get_buffer()])
            except OSError:
                return
            if not n:
                return
            self.last_read = time.monotonic()
            self._decoder.buffer_updated(n)


def _write_all(fd: int, parts: list[Any]) -> None:
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    while views:
        written = os.writev(fd, views[:1024])
        while written and views:
            head = views[0]
            if written >= len(head):
                written -= len(head)
                views.pop(0)
            else:
                views[0] = head[written:]
                written = 0
