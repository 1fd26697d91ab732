"""Fixtures for the pipeline tests: real pools of real worker processes on this machine (`sky.Local()`).

Test modules are not importable on a worker (pytest puts `tests/core` on the client's `sys.path`
only), so every test module is shipped by value (tests/conftest.py), the way a `__main__` script is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from core_support import local_pool

import skyward as sky


@pytest.fixture(scope="module")
def pool() -> Iterator[sky.Pool]:
    """Two nodes shared by a module's tests; tests that damage a pool make their own."""
    compute = local_pool(2)
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()


@pytest.fixture
def fresh_pool() -> Iterator[Callable[..., sky.Pool]]:
    """A factory of started pools that are all stopped when the test ends."""
    started: list[sky.Pool] = []

    def make(nodes: int = 1, **kwargs: Any) -> sky.Pool:
        compute = local_pool(nodes, **kwargs)
        compute.start()
        started.append(compute)
        return compute

    yield make
    for compute in reversed(started):
        compute.stop()


