"""Pools and waits the collection tests share (a module of its own, not conftest.py: test modules
import it by a name no other test directory uses)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import skyward as sky

EXECUTORS = ("thread", "process")


def local_pool(nodes: int = 2, executor: str = "thread", **kwargs: Any) -> sky.Pool:
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    kwargs.setdefault("worker", sky.Worker(executor=executor))
    return sky.Compute(provider=sky.Local(), nodes=nodes, **kwargs)


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
