"""Lingering Lambda VMs (`Options(linger=True)`) against the fake Lambda API, each a real sshd.

A parked pool's VM stays up with its login key; a pool with the same spec adopts it (no new
launch) and, at its own exit, terminates the VM and deletes the parked pool's key, as the parked
pool's own exit would have.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_lambda import FakeLambda
from lambda_support import lambda_pool

from skyward.providers import linger


def test_a_pool_with_the_same_spec_adopts_the_parked_vm_and_deletes_what_its_pool_made(
    lambda_api: FakeLambda,
) -> None:
    with lambda_pool(lambda_api, linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = lambda_api.instances
    assert lambda_api.terminated == [] and lambda_api.ssh_keys
    with lambda_pool(lambda_api) as pool:
        assert square(4) >> pool == 16
        assert list(lambda_api.instances) == [parked] and len(lambda_api.launches) == 1
    assert lambda_api.instances == {} and lambda_api.terminated == [parked]
    assert lambda_api.ssh_keys == {}
    assert linger.parked() == []
