"""Lingering Verda VMs (`Options(linger=True)`) against the fake Verda API, each a real sshd.

A parked pool's VM stays up with its startup script and login key; a pool with the same spec
adopts it (no new deploy) and, at its own exit, deletes the VM, the parked pool's startup script
and its key, as the parked pool's own exit would have.
"""

from __future__ import annotations

from fake_verda import FakeVerda
from verda_support import verda_pool

import skyward as sky
from skyward.providers import linger


@sky.function
def square(x: int) -> int:
    return x * x


def test_a_pool_with_the_same_spec_adopts_the_parked_vm_and_deletes_what_its_pool_made(
    verda_api: FakeVerda,
) -> None:
    with verda_pool(verda_api, accelerator="H100", allocation="on-demand", linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = verda_api.instances
    assert verda_api.deleted == [] and verda_api.scripts and verda_api.ssh_keys
    with verda_pool(verda_api, accelerator="H100", allocation="on-demand") as pool:
        assert square(4) >> pool == 16
        assert list(verda_api.instances) == [parked] and len(verda_api.creates) == 1
    assert verda_api.instances == {} and verda_api.deleted == [parked]
    assert verda_api.scripts == {} and verda_api.ssh_keys == {}
    assert linger.parked() == []
