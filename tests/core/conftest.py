"""Fixtures for the pipeline tests: real pools of real worker processes on this machine (`sky.Local()`).

Test modules are not importable on a worker (pytest puts `tests/core` on the client's `sys.path`
only), so every test module is shipped by value (tests/conftest.py), the way a `__main__` script is.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator

import pytest
from core_support import local_pool
from pool_fixtures import pool_factory, started

import skyward as sky


@pytest.fixture(scope="module")
def pool() -> Iterator[sky.Pool]:
    """Two nodes shared by a module's tests; tests that damage a pool make their own."""
    with started(local_pool(2)) as compute:
        yield compute


@pytest.fixture
def fresh_pool() -> Iterator[Callable[..., sky.Pool]]:
    """A factory of started pools (one node unless asked) that are all stopped when the test ends."""
    with pool_factory(lambda nodes=1, **kwargs: local_pool(nodes, **kwargs)) as make:
        yield make


@pytest.fixture
def interruptible() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here even where pytest inherited an ignored SIGINT (a job
    started with `&` by a non-interactive shell, as CI runners may do: Python then installs no
    handler, and Skyward leaves an ignored signal ignored), and only for this test."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
