"""`sky.plugins.torch(backend="gloo")` across the two nodes of a Slurm job: the rendezvous is the
job's head node, and a collective spans both nodes."""

from __future__ import annotations

from typing import Any

import attrs
from conftest import slurm_pool
from slurm_cluster import SlurmCluster

import skyward as sky


def cluster_torch() -> sky.Plugin:
    """Use the cluster's own torch (a module's build): remove what the torch plugin added."""

    def transform(image: sky.Image, cluster: Any) -> sky.Image:
        keep = tuple(p for p in image.pip if not p.startswith("torch"))
        indexes = tuple(i for i in image.pip_indexes if "pytorch.org" not in i.url)
        return attrs.evolve(image, pip=keep, pip_indexes=indexes)

    return sky.Plugin.create("cluster-torch").with_image_transform(transform)


@sky.function
def all_reduce() -> dict[str, Any]:
    import os

    import torch
    import torch.distributed as dist

    t = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(t)
    return {
        "rank": dist.get_rank(),
        "world": dist.get_world_size(),
        "sum": float(t.item()),
        "master": os.environ["MASTER_ADDR"],
        "node": os.environ.get("SLURMD_NODENAME"),
    }


def test_gloo_all_reduce_spans_the_jobs_two_nodes(slurm: SlurmCluster) -> None:
    plugins = [sky.plugins.torch(backend="gloo", cuda="cpu"), cluster_torch()]
    with slurm_pool(slurm, plugins=plugins) as pool:
        results = all_reduce() @ pool
    assert [r["rank"] for r in results] == [0, 1]
    assert [r["node"] for r in results] == list(slurm.nodes)
    assert all(r["world"] == 2 and r["sum"] == 3.0 for r in results)
    assert {r["master"] for r in results} == {"127.0.0.1"}
    slurm.wait_idle()
