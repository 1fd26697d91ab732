"""Lingering Massed Compute machines (`Options(linger=True)`) against the fake API, each a real sshd.

A parked pool's machine stays up; a pool with the same spec adopts it (no new deploy) and, at its
own exit, terminates it, as the parked pool's own exit would have.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_massed import FakeMassed
from massed_support import massed_pool

from skyward.providers import linger


def test_a_pool_with_the_same_spec_adopts_the_parked_machine_and_terminates_it(
    massed_api: FakeMassed,
) -> None:
    with massed_pool(massed_api, linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = massed_api.instances
    assert massed_api.terminated == []
    with massed_pool(massed_api) as pool:
        assert square(4) >> pool == 16
        assert list(massed_api.instances) == [parked] and len(massed_api.launches) == 1
    assert massed_api.instances == {} and massed_api.terminated == [parked]
    assert linger.parked() == []
