"""Lingering Vultr instances (`Options(linger=True)`) against the fake Vultr API, each a real sshd.

A parked pool's instance stays up with its login key and firewall group; a pool with the same
spec adopts it (no new create) and, at its own exit, deletes the instance, the key and the
firewall group, as the parked pool's own exit would have.
"""

from __future__ import annotations

from fake_vultr import FakeVultr
from vultr_support import vultr_pool

import skyward as sky
from skyward.providers import linger


@sky.function
def square(x: int) -> int:
    return x * x


def test_a_pool_with_the_same_spec_adopts_the_parked_instance_and_deletes_what_its_pool_made(
    vultr_api: FakeVultr,
) -> None:
    with vultr_pool(vultr_api, accelerator="A40", linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = vultr_api.instances
    assert vultr_api.deleted == [] and vultr_api.firewalls and vultr_api.ssh_keys
    with vultr_pool(vultr_api, accelerator="A40") as pool:
        assert square(4) >> pool == 16
        assert list(vultr_api.instances) == [parked] and len(vultr_api.creates) == 1
    assert vultr_api.instances == {} and vultr_api.deleted == [parked]
    assert vultr_api.firewalls == {} and vultr_api.ssh_keys == {}
    assert linger.parked() == []
