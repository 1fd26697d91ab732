"""Lingering Compute Engine VMs (`Options(linger=True)`) against the fake API, each a real sshd.

A parked pool's VM stays up with its firewall rule; a pool with the same spec adopts it (no new
insert) and, at its own exit, deletes the VM and the rule, as the parked pool's own exit would have.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_gcp import FakeGCP
from gcp_support import gcp_pool

from skyward.providers import linger


def test_a_pool_with_the_same_spec_adopts_the_parked_vm_and_deletes_what_its_pool_made(
    gcp_api: FakeGCP,
) -> None:
    with gcp_pool(gcp_api, accelerator="T4", allocation="on-demand", linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = gcp_api.instances
    assert gcp_api.deleted == [] and gcp_api.firewalls
    with gcp_pool(gcp_api, accelerator="T4", allocation="on-demand") as pool:
        assert square(4) >> pool == 16
        assert list(gcp_api.instances) == [parked] and len(gcp_api.inserts) == 1
    assert gcp_api.instances == {} and gcp_api.deleted == [parked] and gcp_api.firewalls == {}
    assert linger.parked() == []
