"""Lingering Scaleway servers (`Options(linger=True)`) against the fake Instance API, each a real
sshd.

A parked pool's server stays up with its security group; a pool with the same spec adopts it (no
new create) and, at its own exit, terminates the server and deletes the group, as the parked
pool's own exit would have.
"""

from __future__ import annotations

from cloud_workloads import square
from fake_scaleway import FakeScaleway
from scaleway_support import scaleway_pool

from skyward.providers import linger


def test_a_pool_with_the_same_spec_adopts_the_parked_server_and_ends_what_its_pool_made(
    scaleway_api: FakeScaleway,
) -> None:
    with scaleway_pool(scaleway_api, accelerator="L40S", linger=True, ttl=120) as pool:
        assert square(3) >> pool == 9
    (parked,) = scaleway_api.servers
    assert scaleway_api.terminated == [] and scaleway_api.groups
    with scaleway_pool(scaleway_api, accelerator="L40S") as pool:
        assert square(4) >> pool == 16
        assert list(scaleway_api.servers) == [parked] and len(scaleway_api.creates) == 1
    assert scaleway_api.servers == {} and scaleway_api.terminated == [parked]
    assert scaleway_api.groups == {}
    assert linger.parked() == []
