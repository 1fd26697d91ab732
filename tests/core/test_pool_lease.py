"""The client's lease on its machines: renewed every third of `Spec.ttl`, within 1 to 15 minutes,
and each renewal holding at least `ttl` ahead (see `skyward.client.fleet`)."""

from __future__ import annotations

import pytest

from skyward.client.release import lease_interval, lease_until


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
