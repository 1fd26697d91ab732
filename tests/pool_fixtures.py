"""Fixture bodies for real pools that tests start themselves (tests/core, tests/collections).

A pool here is started with `start()`, not entered with `with`: entering one binds it as the
current pool, and the tests using these must find `>> sky` unbound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import skyward as sky


@contextmanager
def started(compute: sky.Pool) -> Iterator[sky.Pool]:
    """`compute`, started; stopped when done."""
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()


@contextmanager
def pool_factory(build: Callable[..., sky.Pool]) -> Iterator[Callable[..., sky.Pool]]:
    """A factory of started pools (`build`'s, with its arguments), all stopped, last first, when done."""
    pools: list[sky.Pool] = []

    def make(*args: object, **kwargs: object) -> sky.Pool:
        compute = build(*args, **kwargs)
        compute.start()
        pools.append(compute)
        return compute

    yield make
    for compute in reversed(pools):
        compute.stop()
