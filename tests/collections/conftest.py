"""Fixtures for the collection tests: real pools (Local under both executors, the SSH hosts of
tests/ssh) whose tasks share `sky.dict`, `sky.counter`, `sky.lock`...

Each test names its collections after itself, so tests sharing a pool never see each other's state.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import skyward as sky

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ssh"))  # ssh_hosts: the OpenSSH test hosts

from collection_pools import EXECUTORS, local_pool  # noqa: E402
from pool_fixtures import pool_factory, started  # noqa: E402


@pytest.fixture(scope="module", params=EXECUTORS)
def pool(request: pytest.FixtureRequest) -> Iterator[sky.Pool]:
    """Two Local nodes, once per executor, shared by a module's tests."""
    with started(local_pool(2, request.param)) as compute:
        yield compute


@pytest.fixture
def fresh_pool() -> Iterator[Callable[..., sky.Pool]]:
    """A factory of started Local pools (`local_pool`'s arguments), all stopped when the test ends."""
    with pool_factory(local_pool) as make:
        yield make


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A collection name of this test's own."""
    return request.node.name
