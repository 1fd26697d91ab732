"""Retrying with backoff and a deadline: the one way Skyward waits out a passing failure.

A cloud with no capacity right now, an SSH host still booting, a security group AWS will not
delete while a terminated machine's network interface lingers: each is retried with `retry`,
which runs an async attempt until it succeeds, a failure is not worth retrying, the delays run
out (`backoff(...)` is exponential and capped; a finite one bounds the attempts), or the
deadline passes. It then raises the last error itself, so the caller sees what really went wrong.

Waiting goes through `sleep` and time through `clock`, both injectable: a test checks the
sequence of waits without spending them.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

#: Which errors are worth another attempt: a predicate, or exception types.
RetryOn = Callable[[BaseException], bool] | type[BaseException] | tuple[type[BaseException], ...]


def backoff(
    first: float, *, factor: float = 2.0, cap: float = 60.0, retries: int | None = None
) -> Iterator[float]:
    """The waits between attempts: `first`, then multiplied by `factor` each time, never above `cap`;
    `retries` of them (so at most `retries + 1` attempts), or without end when None."""
    delay = first
    for _ in range(retries) if retries is not None else itertools.count():
        yield min(delay, cap)
        delay *= factor


async def retry(
    attempt: Callable[[], Awaitable[T]],
    *,
    retry_on: RetryOn,
    delays: Iterable[float],
    deadline: float | None = None,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`await attempt()` until it returns; retry what `retry_on` accepts, waiting each of `delays`.

    Gives up, raising the attempt's last error, when the error is not retryable, `delays` is
    exhausted, or `deadline` (a `clock()` value, `time.monotonic` by default) has passed; a wait
    never runs past the deadline. `on_retry(attempts_so_far, error, wait)` is called before
    each wait (to log it).
    """
    accepts = _predicate(retry_on)
    waits = iter(delays)
    tries = 0
    while True:
        tries += 1
        try:
            return await attempt()
        except Exception as exc:
            if not accepts(exc):
                raise
            left = deadline - clock() if deadline is not None else None
            wait = next(waits, None)
            if wait is None or (left is not None and left <= 0):
                raise
            wait = max(0.0, min(wait, left) if left is not None else wait)
            if on_retry is not None:
                on_retry(tries, exc, wait)
            await sleep(wait)


def _predicate(retry_on: RetryOn) -> Callable[[BaseException], bool]:
    if isinstance(retry_on, type | tuple):
        types = retry_on
        return lambda exc: isinstance(exc, types)
    return retry_on
