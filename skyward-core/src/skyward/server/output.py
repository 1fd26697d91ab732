"""A run's output on its way from the nodes to the client: bounded, and never holding a node back.

`sky compute run` streams a script's output from pump threads (one per node, each reading the
node's stream) to the HTTP response on the event loop. A client that reads slower than the script
prints (a slow link, a terminal paused with Ctrl-S, a client that stopped reading) must cost
neither the server's memory nor the pool's progress. So the buffer between them holds at most
`LIMIT` characters of output; beyond that, output is dropped and counted, and where the gap is the
client reads one line on stderr, `[skyward: N line(s) of output dropped here ...]`. A pump never
waits for the client, so a node's stream never waits for the server. What ends a run (its exit
code, a node's failure) is never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any

#: The most output (characters) waiting for a client; beyond, output is dropped and counted.
LIMIT = 8 << 20
#: The streams that carry output (dropped when the buffer is full); any other item is control.
OUTPUT = ("stdout", "stderr")


def dropped_line(lines: int, limit: int) -> str:
    return (f"[skyward: {lines} line(s) of output dropped here: the client read slower than the script "
            f"printed, and the server buffers at most {limit} characters]\n")


class OutputBuffer:
    """`(node, stream, value)` items from any thread to one reader on an event loop (see the module)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._items: deque[tuple[str, str, Any]] = deque()
        self._size = 0
        self._lock = threading.Lock()
        self._waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None

    @property
    def size(self) -> int:
        """Characters of output waiting."""
        return self._size

    def put(self, node: str, stream: str, value: Any) -> None:
        """Add an item without waiting; output past the limit is dropped (and counted)."""
        with self._lock:
            if stream in OUTPUT and self._size + len(value) > self.limit:
                self._drop(node, max(1, str(value).count("\n")))
            else:
                if stream in OUTPUT:
                    self._size += len(value)
                self._items.append((node, stream, value))
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            loop, future = waiter
            with contextlib.suppress(RuntimeError):  # a closed loop: the server is stopping, nobody reads
                loop.call_soon_threadsafe(_wake, future)

    def _drop(self, node: str, lines: int) -> None:
        last = self._items[-1] if self._items else None
        if last is not None and last[0] == node and last[1] == "dropped":
            last[2][0] += lines  # one marker for a whole gap
        else:
            self._items.append((node, "dropped", [lines]))

    async def get(self) -> tuple[str, str, Any]:
        """The next item, waiting for one; a gap reads as one stderr line saying how much was dropped."""
        while True:
            with self._lock:
                if self._items:
                    node, stream, value = self._items.popleft()
                    if stream in OUTPUT:
                        self._size -= len(value)
                    elif stream == "dropped":
                        return node, "stderr", dropped_line(value[0], self.limit)
                    return node, stream, value
                loop = asyncio.get_running_loop()
                future: asyncio.Future[None] = loop.create_future()
                self._waiter = (loop, future)
            await future


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
