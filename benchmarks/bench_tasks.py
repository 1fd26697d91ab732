"""The functions every framework runs in the benchmarks.

This module is imported on the workers of every framework (the runner puts its folder on
PYTHONPATH), so it imports nothing heavy at module level: a peer's first task must not pay for
another framework's imports.
"""

from __future__ import annotations

import time
from typing import Any


def noop(x: Any = None) -> Any:
    """The smallest task: returns its argument."""
    return x


def square(x: int) -> int:
    """A small joblib task."""
    return x * x


def receive(array: Any) -> float:
    """Payload, client -> worker: the wall-clock time at which the argument has arrived."""
    return time.time()


def produce(nbytes: int) -> tuple[Any, float]:
    """Payload, worker -> client: `nbytes` of random float64 and the time they start their trip."""
    import numpy as np

    array = np.random.default_rng().random(nbytes // 8)
    return array, time.time()
