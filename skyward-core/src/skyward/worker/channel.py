"""The worker's end of the protocol: frames read from and written to private file descriptors.

A client on this host (Local) names a shared-memory folder in `shm.ENV`; large parts of the frames
this worker sends then travel through it (see `skyward.transport.shm`), and segments the client
sent are mapped on arrival whichever transport started the worker.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from skyward.transport import shm
from skyward.wire import Frame, FrameDecoder, Kind, encode, offload, skip_written

#: The most parts one `writev` takes (Linux's IOV_MAX).
IOV_MAX = 1024


class WorkerChannel:
    """Blocking frame I/O on raw descriptors; writes from many threads are serialised by a lock.

    `on_idle` runs on the reading thread when it has no frame left, just before it reads (and may
    block): outcomes held back to leave together go then.
    """

    def __init__(self, read_fd: int, write_fd: int, reply_fd: int | None = None) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        #: The reply lane (`skyward.transport.lane`): answers to CALL frames, when the client gave one.
        self.reply_fd = reply_fd
        #: Writes on the main descriptor so far: a CALL's answer goes to the lane only if its task
        #: wrote nothing there meanwhile, so it never overtakes the task's output.
        self.writes = 0
        self._ready: deque[Frame] = deque()
        self._decoder = FrameDecoder(self._ready.append, shm=shm.open_segment)
        self._lock = threading.Lock()
        self.last_read = time.monotonic()  # when the client was last heard from (ttl watchdog)
        self.on_idle: Callable[[], None] | None = None
        # Popped: the folder belongs to this channel, not to processes a task starts.
        folder = os.environ.pop(shm.ENV, None)
        self._shm_folder = folder if folder and os.path.isdir(folder) else None
        self._shm = shm.SegmentWriter(self._shm_folder, "w") if self._shm_folder else None

    def send(self, kind: Kind, id: int = 0, payload: Any = None) -> None:
        self.send_parts(self.encode(kind, id, payload))

    def encode(self, kind: Kind, id: int = 0, payload: Any = None) -> list[Any]:
        """One frame's parts for this channel: large ones moved to shared memory where it has some.

        The copy into shared memory happens here, on the caller's thread, outside the write lock.
        """
        parts = encode(kind, id, payload)
        writer = self._shm
        if writer is not None:
            parts = offload(parts, writer.put, shm.MIN_SIZE)
        return parts

    def send_parts(self, parts: list[Any]) -> None:
        """Write encoded frames (one or many, in order) in one vectored write."""
        with self._lock:
            self.writes += 1
            _write_all(self._write_fd, parts)

    def send_reply(self, parts: list[Any]) -> bool:
        """Write one answer to the reply lane; False if it has none or it broke (then send it on
        the main descriptor)."""
        if self.reply_fd is None:
            return False
        try:
            _write_all(self.reply_fd, parts)
        except OSError:
            self.reply_fd = None
            return False
        return True

    def more_to_read(self) -> bool:
        """Whether frames already read wait to be handled (a burst the client wrote at once)."""
        return bool(self._ready)

    def frames(self):
        """Yield frames until the client closes the channel."""
        while True:
            while self._ready:
                yield self._ready.popleft()
            if self.on_idle is not None:
                self.on_idle()  # about to wait for the client: send what was held back
            try:
                n = os.readv(self._read_fd, [self._decoder.get_buffer()])
            except OSError:
                n = 0
            if not n:
                self._end_shm()
                return
            self.last_read = time.monotonic()
            self._decoder.buffer_updated(n)

    def _end_shm(self) -> None:
        """The client is gone or closing and reads nothing more: remove every segment (a client
        killed outright cannot), and send the rest of the frames through the pipe."""
        self._shm = None
        if self._shm_folder is not None:
            shm.remove_folder(self._shm_folder)


def _write_all(fd: int, parts: list[Any]) -> None:
    """Write every part, in vectored writes of the parts as they are (a frame usually takes one)."""
    while parts:
        parts = skip_written(parts, os.writev(fd, parts[:IOV_MAX]))
