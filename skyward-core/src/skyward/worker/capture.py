"""Captures fd 1 and 2 so user prints (and C libraries) reach the client as LOG frames.

The protocol stream has already been moved to private descriptors; fd 1/2 point at pipes that a
pump thread drains. Before a task's result is sent, `drain()` forwards whatever the task printed,
so its output arrives on the client before its result.
"""

from __future__ import annotations

import fcntl
import os
import select
import sys
import threading

from skyward.task.output_routing import RoutingStream
from skyward.wire import Kind


class OutputPump:
    def __init__(self, send) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._fds: dict[int, str] = {}
        self._thread: threading.Thread | None = None
        self._stop_r, self._stop_w = os.pipe()
        # Which capture pipes hold output, asked before every result: a poll object registered
        # once answers in half the time of a select() over a fresh list.
        self._poll = select.poll()

    def capture(self, target_fd: int, stream: str) -> None:
        r, w = os.pipe()
        os.dup2(w, target_fd)
        os.close(w)
        flags = fcntl.fcntl(r, fcntl.F_GETFL)
        fcntl.fcntl(r, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self._fds[r] = stream
        self._poll.register(r, select.POLLIN)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="skyward-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        watched = [*self._fds, self._stop_r]
        while True:
            ready, _, _ = select.select(watched, [], [])
            if self._stop_r in ready:
                self.drain()
                return
            self.drain(ready)

    def drain(self, fds=None) -> None:
        """Forward everything buffered in the capture pipes now."""
        for stream in (sys.stdout, sys.stderr):
            try:
                if fds is None and type(stream) is RoutingStream:
                    # A task's check before its outcome (the pump thread's own drains pass `fds`
                    # and must not take the router's note that a sink was written).
                    stream.flush_written()
                else:
                    stream.flush()
            except Exception:  # noqa: BLE001 - a closed user stream must not stop the pump
                pass
        with self._lock:  # even with nothing to read: a drain under way on the pump thread goes first
            if fds is None:
                # One zero-timeout poll says which pipes hold output (it runs before every result,
                # and most tasks print nothing), instead of a failing read on each. Under the
                # lock: a poll object refuses a second caller while one is inside (task threads
                # of a worker with several slots answer at the same time).
                fds = [fd for fd, _ in self._poll.poll(0)]
            for fd in fds:
                stream = self._fds.get(fd)
                if stream is None:
                    continue
                chunks = []
                while True:
                    try:
                        data = os.read(fd, 65536)
                    except BlockingIOError:
                        break
                    if not data:
                        break
                    chunks.append(data)
                if chunks:
                    text = b"".join(chunks).decode("utf-8", errors="replace")
                    self._send(Kind.LOG, 0, (stream, text))

    def stop(self) -> None:
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2)
