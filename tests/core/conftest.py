"""Fixtures for the pipeline tests: real pools of real worker processes on this machine (`sky.Local()`).

Test modules are not importable on a worker (pytest puts `tests/core` on the client's `sys.path`
only), so every test module is shipped by value, the way a `__main__` script is.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import cloudpickle
import pytest

import skyward as sky

# The helpers below run on workers too.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(autouse=True, scope="module")
def _ship_test_module_by_value(request: pytest.FixtureRequest) -> Iterator[None]:
    module = request.module
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


def local_pool(nodes: int = 2, **kwargs: Any) -> sky.Pool:
    """A Local pool that is not entered with `with`, so `>> sky` stays unbound in the tests using it."""
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=sky.Local(), nodes=nodes, **kwargs)


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


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie, dead but not reaped yet, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


@sky.function
def worker_pid() -> int:
    return os.getpid()


@sky.function
def node_index() -> int:
    return sky.instance_info().node


def assert_pool_works(compute: sky.Pool) -> None:
    """Every node of `compute` still takes and finishes a task."""
    assert node_index() @ compute == list(range(compute.current_nodes()))
