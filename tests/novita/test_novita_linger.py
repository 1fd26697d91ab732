"""Lingering Novita instances (`Options(linger=True)`) against the fake Novita API, each a real sshd.

A parked pool's instance stays up; a pool with the same spec adopts it (no new instance is
created) and deletes it at its own exit.
"""

from __future__ import annotations

from fake_novita import FakeNovita
from novita_support import novita_pool

import skyward as sky
from skyward.providers import linger


@sky.function
def square(x: int) -> int:
    return x * x


def test_a_pool_with_the_same_spec_adopts_the_parked_instance(novita_api: FakeNovita) -> None:
    with novita_pool(novita_api, accelerator="A100", allocation="on-demand", linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = novita_api.instances
    assert novita_api.deleted == []
    with novita_pool(novita_api, accelerator="A100", allocation="on-demand") as pool:
        assert square(4) >> pool == 16
        assert list(novita_api.instances) == [parked] and len(novita_api.creates) == 1
    assert novita_api.instances == {} and novita_api.deleted == [parked]
    assert linger.parked() == []
