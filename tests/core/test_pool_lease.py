"""The client's lease on its machines: renewed every third of `Spec.ttl`, within 1 to 15 minutes,
and each renewal holding at least `ttl` ahead (see `skyward.client.fleet`)."""

from __future__ import annotations

import asyncio

import pytest

from skyward.client.release import MachineRelease, lease_interval, lease_until


@pytest.mark.parametrize(("ttl", "every"), [(600, 200.0), (30, 60.0), (0, 60.0), (36_000, 900.0)])
def test_the_lease_is_renewed_every_third_of_ttl_within_a_minute_and_a_quarter_hour(
    ttl: int, every: float
) -> None:
    assert lease_interval(ttl) == every


@pytest.mark.parametrize("ttl", [0, 30, 600, 36_000])
def test_one_renewal_holds_ttl_ahead_and_outlasts_two_missed_renewals(ttl: int) -> None:
    until = lease_until(ttl, now=1_000.0)
    assert until - 1_000.0 >= ttl
    assert until - 1_000.0 >= 3 * lease_interval(ttl)


class SlowLabels:
    """A provider whose lease mark (a label, as Vast's) takes a while to write; it keeps each mark
    in the order they land."""

    def __init__(self) -> None:
        self.landed: list[float] = []
        self.called = asyncio.Event()

    async def renew_lease(self, cluster: object, instances: list[object], until: float) -> None:
        self.called.set()
        await asyncio.sleep(0.2)
        self.landed.append(until)


class Log:
    def warning(self, *args: object, **fields: object) -> None:
        raise AssertionError(f"no renewal should fail here: {args} {fields}")


def test_a_renewal_under_way_at_the_stop_lands_before_what_the_stop_marks_next() -> None:
    """A pool parked right after it started: its lease loop's first renewal (ttl ahead and more) was
    under way, and it must not land over the parked machine's `until`."""

    async def park_right_after_the_start() -> list[float]:
        labels = SlowLabels()
        release = MachineRelease("pool", None, Log(), None)  # type: ignore[arg-type]
        renewing = asyncio.ensure_future(release.renew_lease(labels, "cluster", list, 120.0, lambda: False))
        await labels.called.wait()
        await release.stop_renewing(renewing)
        await labels.renew_lease("cluster", [], until=1.0)  # the park's mark
        return labels.landed

    landed = asyncio.run(park_right_after_the_start())
    assert landed[-1] == 1.0
    assert len(landed) == 2
