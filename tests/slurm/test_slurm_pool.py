"""A pool on a Slurm cluster is one job whose nodes are the pool's nodes; a script runs unchanged."""

from __future__ import annotations

import os
from typing import Any

import pytest
from slurm_cluster import SlurmCluster
from ssh_hosts import pid_alive, wait_until

import skyward as sky


@sky.function
def where() -> dict[str, Any]:
    info = sky.instance_info()
    return {
        "node": info.node,
        "total": info.total_nodes,
        "id": info.id,
        "provider": info.provider,
        "slurm_node": os.environ.get("SLURMD_NODENAME"),
        "job": os.environ.get("SLURM_JOB_ID"),
    }


@sky.function
def add(a: int, b: int) -> int:
    return a + b


@sky.function
def square(x: int) -> int:
    return x * x


@sky.function
def sleep_for(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


@sky.function
def pid() -> int:
    return os.getpid()


def test_a_broadcast_lands_on_both_slurm_nodes_of_one_job(pool: sky.Pool, slurm: SlurmCluster) -> None:
    seen = where() @ pool
    assert [s["node"] for s in seen] == [0, 1]
    assert [s["slurm_node"] for s in seen] == list(slurm.nodes)
    assert len({s["job"] for s in seen}) == 1
    assert [j["id"] for j in slurm.jobs()] == [seen[0]["job"]]


def test_instance_info_names_the_slurm_node(pool: sky.Pool, slurm: SlurmCluster) -> None:
    seen = where() @ pool
    assert [s["id"] for s in seen] == list(slurm.nodes)
    assert {s["provider"] for s in seen} == {"slurm"}


def test_operators_and_maps_run_as_anywhere(pool: sky.Pool) -> None:
    assert add(2, 3) >> pool == 5
    assert (add(1, 2) & add(3, 4)) >> pool == (3, 7)
    assert list(pool.map(square, range(6))) == [0, 1, 4, 9, 16, 25]


def test_a_stuck_worker_is_killed_and_started_again_on_its_node(pool: sky.Pool) -> None:
    before = pid() @ pool
    with pytest.raises(TimeoutError, match="did not finish within"):
        sleep_for(60).with_timeout(1) >> pool
    # time.sleep cannot be interrupted: the client kills that worker's srun, which ends its step
    # (the worker with it), and starts a new step on the same node of the same job.
    assert wait_until(lambda: sum(pid_alive(p) for p in before) == 1, timeout=30)
    assert wait_until(lambda: pool.current_nodes() == 2, timeout=30)
    after = pid() @ pool
    assert len(set(after) - set(before)) == 1
