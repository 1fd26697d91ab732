"""A plugin can ask for several worker processes per node (as mig does, one per GPU instance)."""

from __future__ import annotations

import os
import sys

import cloudpickle
import pytest

import skyward as sky
from skyward.plugins import Plugin

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def workers(n: int) -> Plugin:
    return Plugin.create(f"workers-{n}").with_workers_per_node(lambda spec: n)


@sky.function
def where() -> tuple[int, int, int, int, int, int]:
    info = sky.instance_info()
    return info.node, info.worker, info.workers_per_node, info.global_worker_index, info.total_workers, os.getpid()


def test_each_node_runs_the_requested_workers_as_separate_processes() -> None:
    with sky.Compute(provider=sky.Local(), nodes=2, plugins=[workers(2)], console=False) as pool:
        results = where() @ pool
        assert [r[:5] for r in results] == [(0, 0, 2, 0, 4), (0, 1, 2, 1, 4), (1, 0, 2, 2, 4), (1, 1, 2, 3, 4)]
        assert len({r[5] for r in results}) == 4
        assert pool.current_nodes() == 2


def test_target_names_a_node_and_reaches_its_first_worker() -> None:
    with sky.Compute(provider=sky.Local(), nodes=2, plugins=[workers(3)], console=False) as pool:
        assert pool.run(where(), target=1)[:2] == (1, 0)


def test_round_robin_spreads_tasks_over_every_worker() -> None:
    with sky.Compute(provider=sky.Local(), nodes=2, plugins=[workers(2)], console=False) as pool:
        seen = {r[3] for r in pool.map(lambda _: where.fn(), range(12))}
        assert seen == {0, 1, 2, 3}


def test_plugins_that_disagree_on_workers_per_node_are_refused() -> None:
    with pytest.raises(sky.PluginError, match="disagree on workers per node"), sky.Compute(
        provider=sky.Local(), plugins=[workers(2), workers(3)], console=False
    ):
        pass


def test_mig_profile_sets_workers_per_node_from_the_accelerator() -> None:
    # Local says it does not run mig's bootstrap op (it partitions a GPU this machine lacks).
    with pytest.warns(UserWarning, match=r"bootstrap ops \(mig\) are not run"), sky.Compute(
        provider=sky.Local(), accelerator=sky.accelerators.A100(count=2),
        plugins=[sky.plugins.mig("3g.40gb")], console=False,
    ) as pool:
        assert pool.workers_per_node == 4  # two 3g.40gb instances on each of two A100-80GB


@sky.function
def world() -> tuple[int, int, float]:
    import torch
    import torch.distributed as dist

    value = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(value)
    return dist.get_rank(), dist.get_world_size(), value.item()


def test_torch_process_group_spans_every_worker_of_every_node() -> None:
    with sky.Compute(
        provider=sky.Local(), nodes=2, plugins=[sky.plugins.torch(backend="gloo"), workers(2)], console=False
    ) as pool:
        assert world() @ pool == [(0, 4, 10.0), (1, 4, 10.0), (2, 4, 10.0), (3, 4, 10.0)]
