"""Several pools on one event loop (`sky.Session`, `sky.MultiPool`) and the `@sky.pool` decorator."""

from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from skyward.client.loop import LoopThread
from skyward.client.pool import Pool

F = TypeVar("F", bound=Callable[..., Any])


class Session:
    """Owns one event loop shared by the pools it opens, and closes them all on exit.

        with sky.Session() as session:
            cpu = session.compute(nodes=4)
            gpu = session.compute(accelerator="T4")
    """

    def __init__(self) -> None:
        self._loop: LoopThread | None = None
        self._pools: list[Pool] = []

    def __enter__(self) -> Session:
        self._loop = LoopThread("skyward-session")
        return self

    def compute(self, *specs: Any, **kwargs: Any) -> Pool:
        """Start a pool on this session's loop; it stays up until the session ends."""
        if self._loop is None:
            raise RuntimeError("open the session first: `with sky.Session() as session:`")
        pool = Pool(*specs, **kwargs)
        pool.start(self._loop)
        self._pools.append(pool)
        return pool

    def start_all(self, pools: list[Pool]) -> list[Pool]:
        """Start several pools concurrently: provisioning takes max(t_i), not sum(t_i)."""
        if self._loop is None:
            raise RuntimeError("open the session first: `with sky.Session() as session:`")
        with concurrent.futures.ThreadPoolExecutor(len(pools) or 1) as starter:
            futures = [starter.submit(p.start, self._loop) for p in pools]
            errors = [f.exception() for f in futures]
        self._pools.extend(p for p, e in zip(pools, errors) if e is None)
        failed = next((e for e in errors if e is not None), None)
        if failed is not None:
            raise failed
        return pools

    def __exit__(self, *exc: Any) -> None:
        try:
            for pool in reversed(self._pools):
                pool.stop()
        finally:
            self._pools.clear()
            if self._loop is not None:
                self._loop.stop()
                self._loop = None


class MultiPool:
    """Provision several pools in parallel: `with sky.MultiPool(p1, p2) as (a, b):`."""

    def __init__(self, *pools: Pool) -> None:
        self._pools = list(pools)
        self._session = Session()

    def __enter__(self) -> tuple[Pool, ...]:
        self._session.__enter__()
        try:
            self._session.start_all(self._pools)
        except BaseException:
            self._session.__exit__(None, None, None)
            raise
        return tuple(self._pools)

    def __exit__(self, *exc: Any) -> None:
        self._session.__exit__(*exc)


def pool(*specs: Any, **kwargs: Any) -> Callable[[F], F]:
    """Decorator form of `sky.Compute`: provision on call, run, tear down on return or raise.

    Inside the function, `>> sky` / `@ sky` dispatch to this pool.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            with Pool(*specs, **kwargs):
                return fn(*args, **kw)

        return wrapper  # type: ignore[return-value]

    return decorate
