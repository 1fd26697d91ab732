"""The channel contract every transport implements (pipes for Local, an SSH exec channel later).

A channel is owned by the pool's event loop. `send` queues already-encoded frame parts and never
blocks; decoded frames go to `on_frame`; `on_closed` fires once when the peer is gone.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from skyward.wire import Frame, Kind, encode


class Channel(abc.ABC):
    def __init__(self) -> None:
        self.on_frame: Callable[[Frame], None] = lambda frame: None
        self.on_closed: Callable[[BaseException | None], None] = lambda exc: None

    @abc.abstractmethod
    def start(self) -> None:
        """Begin delivering frames (after the callbacks are set)."""

    @abc.abstractmethod
    def send_parts(self, parts: list[Any]) -> None:
        """Queue encoded frame parts for writing, in order."""

    def send(self, kind: Kind, id: int = 0, payload: Any = None) -> None:
        self.send_parts(encode(kind, id, payload))

    #: Whether `send_now` may be called from any thread.
    can_send_now = False

    def send_now(self, parts: list[Any]) -> bool:
        """Write frames at once from any thread; False if nothing was written. Only transports
        whose writes need no loop (pipes) implement it; an SSH channel belongs to its loop."""
        return False

    def enable_lane(self) -> Any:
        """The reply lane (`skyward.transport.lane`) after the worker said it has one; None on
        transports without one."""
        return None

    @abc.abstractmethod
    async def close(self, timeout: float = 5.0) -> None:
        """Stop the peer (gracefully, then by force after `timeout`) and release resources."""

    @abc.abstractmethod
    def kill(self) -> None:
        """Stop the peer at once (a stuck or lost node)."""

    @property
    @abc.abstractmethod
    def pid(self) -> int | None:
        """The worker's process id where the transport knows it."""
