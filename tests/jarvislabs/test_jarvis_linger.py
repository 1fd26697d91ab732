"""Lingering JarvisLabs instances (`Options(linger=True)`) against the fake API, each a real sshd.

A parked pool's instance stays up; a pool with the same spec adopts it (no new create) and, at
its own exit, destroys it, as the parked pool's own exit would have.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_jarvis import FakeJarvis
from jarvis_support import jarvis_pool

from skyward.providers import linger


def test_a_pool_with_the_same_spec_adopts_the_parked_instance_and_destroys_it(jarvis_api: FakeJarvis) -> None:
    with jarvis_pool(jarvis_api, linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = jarvis_api.instances
    assert jarvis_api.destroyed == []
    with jarvis_pool(jarvis_api) as pool:
        assert square(4) >> pool == 16
        assert list(jarvis_api.instances) == [parked] and len(jarvis_api.launches) == 1
    assert jarvis_api.instances == {} and jarvis_api.destroyed == [parked]
    assert linger.parked() == []
