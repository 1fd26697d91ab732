"""A held pool's live events, for attached scripts that call `pool.on(...)` (`client/attach.py`).

The server's pool emits its events on its own bus, on the pool's thread (`Pools._record` keeps
them in the history); each attached script that subscribes gets a bounded queue of its own on the
server's event loop, and the events route (`GET /v1/pools/NAME/events`) streams what lands in it
as length-prefixed pickled frames until the script goes away (the route's generator is then
cancelled, and the subscription dropped). A subscriber too slow to keep up loses the oldest
events rather than slowing the pool: the pool never waits for a listener.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import cloudpickle
import structlog

#: Events kept for one subscriber that has not read them yet; beyond, the oldest go.
BACKLOG = 10_000


def _put(q: asyncio.Queue[Any], event: Any) -> None:
    if q.full():
        q.get_nowait()  # the oldest goes
    q.put_nowait(event)


class EventFeed:
    """The subscribers of one pool's events."""

    def __init__(self) -> None:
        self._queues: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]]] = []
        self._lock = threading.Lock()

    def publish(self, event: Any) -> None:
        """Hand `event` to every subscriber, from any thread, without waiting."""
        with self._lock:
            queues = list(self._queues)
        for loop, q in queues:
            try:
                loop.call_soon_threadsafe(_put, q, event)
            except RuntimeError:  # that loop is closed: the server is stopping
                continue

    async def frames(self) -> AsyncIterator[bytes]:
        """A new subscription's events as frames (4 bytes of length, then the pickle), first an
        empty frame (the subscription is in place); an event that cannot be pickled is skipped."""
        entry = (asyncio.get_running_loop(), asyncio.Queue[Any](BACKLOG))
        with self._lock:
            self._queues.append(entry)
        try:
            yield (0).to_bytes(4, "big")
            while True:
                event = await entry[1].get()
                try:
                    body = cloudpickle.dumps(event)
                except Exception as error:  # noqa: BLE001 - one event lost, logged
                    structlog.get_logger().debug("skyward.server_event_not_sent", error=str(error))
                    continue
                yield len(body).to_bytes(4, "big") + body
        finally:
            with self._lock:
                if entry in self._queues:
                    self._queues.remove(entry)
