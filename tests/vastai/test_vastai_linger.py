"""Lingering Vast.ai instances (`Options(linger=True)`) against the fake Vast API, each a real sshd.

A parked pool's instance stays rented, its label's lease moved to when its guardian ends it; a
pool with the same spec adopts it (no new rental: the instance answers with the host key its pool
gave it, which the adopter pins) and destroys it at its own exit.
"""

from __future__ import annotations

import time

from vast_server import FakeVast
from vast_support import vast_pool

import skyward as sky
from skyward.providers import linger


@sky.function
def square(x: int) -> int:
    return x * x


def test_a_pool_with_the_same_spec_adopts_the_parked_instance(vast: FakeVast) -> None:
    with vast_pool(vast, accelerator="RTX 4090", linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = vast.live
    lease = int(str(parked.row()["label"]).rsplit("@", 1)[1])
    assert abs(lease - (time.time() + 120)) < 30  # `sky ls` and `sky down --expired` read it
    assert vast.destroyed == []
    with vast_pool(vast, accelerator="RTX 4090") as pool:
        assert square(4) >> pool == 16
        assert [i.id for i in vast.live] == [parked.id] and len(vast.created) == 1
    assert vast.live == [] and vast.destroyed == [parked.id]
    assert linger.parked() == []
