"""What a pool's machines cost: each instance's hourly rate over the time it existed.

The figure is an estimate from the rate the provider reported at launch (`Instance.hourly_rate`);
the cloud's bill is the truth. It is shown when the pool closes (`ClusterDestroyed.cost`), so a
user sees what a run spent without opening a billing console.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any


class Spend:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._running: dict[str, tuple[float, float]] = {}
        self._closed = 0.0

    def started(self, instances: Iterable[Any]) -> None:
        """The pool holds these machines from now on."""
        now = self._clock()
        for instance in instances:
            self._running.setdefault(instance.id, (now, float(instance.hourly_rate or 0.0)))

    def stopped(self, instances: Iterable[Any]) -> None:
        """The pool let these machines go (terminated, or at least asked to be)."""
        now = self._clock()
        for instance in instances:
            since, rate = self._running.pop(instance.id, (now, 0.0))
            self._closed += rate * (now - since) / 3600

    @property
    def usd(self) -> float:
        """Spent so far, machines still running included."""
        now = self._clock()
        return self._closed + sum(rate * (now - since) / 3600 for since, rate in self._running.values())
