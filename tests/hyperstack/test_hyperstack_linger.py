"""Lingering Hyperstack VMs (`Options(linger=True)`) against the fake Infrahub API, each a real sshd.

A parked pool's VM stays up with its keypair; a pool with the same spec adopts it (no new create)
and, at its own exit, deletes the VM and the parked pool's keypair, as the parked pool's own exit
would have.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_infrahub import FakeInfrahub
from hyperstack_support import hyperstack_pool

from skyward.providers import linger


def test_a_pool_with_the_same_spec_adopts_the_parked_vm_and_deletes_what_its_pool_made(
    hyperstack_api: FakeInfrahub,
) -> None:
    with hyperstack_pool(hyperstack_api, accelerator="L40", linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = hyperstack_api.vms
    assert hyperstack_api.deleted_vms == [] and hyperstack_api.keypairs
    with hyperstack_pool(hyperstack_api, accelerator="L40") as pool:
        assert square(4) >> pool == 16
        assert list(hyperstack_api.vms) == [parked] and len(hyperstack_api.creates) == 1
    assert hyperstack_api.vms == {} and hyperstack_api.deleted_vms == [parked]
    assert hyperstack_api.keypairs == {}
    assert linger.parked() == []
