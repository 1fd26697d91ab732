"""`sky.plugins.torch(backend="gloo")` across two SSH hosts: the process group forms over the
hosts' own addresses (MASTER_ADDR is host 0's), and a collective spans both.

The hosts already have torch: `SSH(python=...)` builds each venv on that interpreter with its
site-packages visible, and a small plugin after torch's drops torch from `Image.pip`, as a user with
torch preinstalled on their machines would, so the bootstrap downloads nothing.
"""

from __future__ import annotations

from typing import Any

import attrs
from ssh_hosts import SSHHosts, ssh_pool

import skyward as sky


def host_torch() -> sky.Plugin:
    """Use the hosts' own torch: remove what the torch plugin added to the image."""

    def transform(image: sky.Image, cluster: Any) -> sky.Image:
        keep = tuple(p for p in image.pip if not p.startswith("torch"))
        indexes = tuple(i for i in image.pip_indexes if "pytorch.org" not in i.url)
        return attrs.evolve(image, pip=keep, pip_indexes=indexes)

    return sky.Plugin.create("host-torch").with_image_transform(transform)


@sky.function
def all_reduce() -> dict[str, Any]:
    import os

    import torch
    import torch.distributed as dist

    t = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(t)
    return {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": float(t.item()),
            "master": os.environ["MASTER_ADDR"], "backend": str(dist.get_backend())}


def test_gloo_all_reduce_spans_two_ssh_hosts(ssh_hosts: SSHHosts) -> None:
    plugins = [sky.plugins.torch(backend="gloo", cuda="cpu"), host_torch()]
    with ssh_pool(ssh_hosts, plugins=plugins) as compute:
        results = all_reduce() @ compute
    assert [r["rank"] for r in results] == [0, 1]
    assert all(r["world"] == 2 and r["sum"] == 3.0 and r["backend"] == "gloo" for r in results)
    assert {r["master"] for r in results} == {ssh_hosts.servers[0].address}
