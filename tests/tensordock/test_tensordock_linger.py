"""Lingering TensorDock VMs (`Options(linger=True)`) against the fake marketplace, each a real sshd.

A parked pool's VM stays up; a pool with the same spec adopts it (no new deploy) and, at its own
exit, deletes it, as the parked pool's own exit would have; a failed delete call on the way is
retried and the deletion confirmed.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_tensordock import FakeTensorDock
from tensordock_support import tensordock_pool

from skyward.providers import linger


def test_a_pool_with_the_same_spec_adopts_the_parked_vm_and_deletes_it(
    tensordock_api: FakeTensorDock,
) -> None:
    with tensordock_pool(tensordock_api, linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = tensordock_api.vms
    assert tensordock_api.deleted == []
    tensordock_api.delete_errors = 1
    with tensordock_pool(tensordock_api) as pool:
        assert square(4) >> pool == 16
        assert list(tensordock_api.vms) == [parked] and len(tensordock_api.deploys) == 1
    assert tensordock_api.vms == {} and tensordock_api.deleted == [parked]
    assert tensordock_api.delete_errors == 0, "the failed delete was retried"
    assert linger.parked() == []
