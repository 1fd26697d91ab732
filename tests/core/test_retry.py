"""`skyward.retry`: how long it waits between attempts, when it gives up, and what it raises.

Time is a fake clock that only the fake `sleep` moves, so each test reads the waits retry asked
for instead of spending them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import attrs
import pytest

from skyward.retry import backoff, retry


@attrs.define
class FakeTime:
    now: float = 0.0
    waits: list[float] = attrs.field(factory=list)

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


class Busy(Exception):
    """A failure worth retrying."""


def failing(
    times: int, error: Callable[[int], Exception] = lambda n: Busy(f"busy {n}")
) -> Callable[[], Awaitable[str]]:
    """An attempt that raises `error(n)` on its first `times` calls, then answers "done"."""
    calls = 0

    async def attempt() -> str:
        nonlocal calls
        calls += 1
        if calls <= times:
            raise error(calls)
        return "done"

    return attempt


def run(attempt: Callable[[], Awaitable[str]], fake: FakeTime, **kwargs: object) -> str:
    kwargs.setdefault("retry_on", Busy)
    return asyncio.run(retry(attempt, sleep=fake.sleep, clock=fake.clock, **kwargs))  # type: ignore[arg-type]


def test_backoff_doubles_from_the_first_wait_up_to_the_cap() -> None:
    assert list(backoff(1.0, cap=10.0, retries=6)) == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff_without_a_count_never_runs_out() -> None:
    waits = backoff(0.5, factor=3.0, cap=100.0)
    assert [next(waits) for _ in range(5)] == [0.5, 1.5, 4.5, 13.5, 40.5]


def test_a_passing_failure_is_retried_with_the_backoff_waits_until_it_succeeds() -> None:
    fake = FakeTime()
    assert run(failing(3), fake, delays=backoff(1.0, cap=10.0)) == "done"
    assert fake.waits == [1.0, 2.0, 4.0]


def test_a_wait_never_runs_past_the_deadline_and_then_the_last_error_is_raised() -> None:
    fake = FakeTime()
    with pytest.raises(Busy, match="busy 4"):
        run(failing(100), fake, delays=backoff(2.0), deadline=10.0)
    assert fake.waits == [2.0, 4.0, 4.0]  # the third wait is cut to the 4 s left


def test_when_the_delays_run_out_the_last_error_is_raised() -> None:
    fake = FakeTime()
    with pytest.raises(Busy, match="busy 3"):
        run(failing(100), fake, delays=[1.0, 1.0])
    assert fake.waits == [1.0, 1.0]


def test_an_error_it_is_not_told_to_retry_passes_through_at_once() -> None:
    fake = FakeTime()
    with pytest.raises(KeyError):
        run(failing(1, lambda n: KeyError("for good")), fake, delays=backoff(1.0))
    assert fake.waits == []


def test_a_predicate_decides_which_errors_are_retried() -> None:
    fake = FakeTime()
    attempt = failing(5, lambda n: Busy("for good") if n == 2 else Busy("later"))
    with pytest.raises(Busy, match="for good"):
        run(attempt, fake, retry_on=lambda exc: str(exc) == "later", delays=backoff(1.0))
    assert fake.waits == [1.0]


def test_each_retry_is_reported_with_its_attempt_error_and_wait() -> None:
    fake = FakeTime()
    seen: list[tuple[int, str, float]] = []
    run(failing(2), fake, delays=backoff(0.5), on_retry=lambda n, exc, wait: seen.append((n, str(exc), wait)))
    assert seen == [(1, "busy 1", 0.5), (2, "busy 2", 1.0)]
