"""An interruptible pod that RunPod takes back (the API reports it EXITED, its container is gone):
the pool says it was preempted, puts a new pod in its node slot, and runs the task it had in
flight again there, with the right result; when no new pod can be had, the tasks pinned to that
node fail by name and the pool goes on with the nodes it has."""

from __future__ import annotations

from pathlib import Path

import pytest
from cloud_workloads import (
    assert_replaced_and_retried,
    double_slowly_the_first_time,
    instance_id,
    preempt_node_1,
    preemption_events,
)
from fake_runpod import FakeRunPod
from runpod_support import runpod_pool
from ssh_hosts import wait_until

import skyward as sky


def test_a_reclaimed_interruptible_pod_is_replaced_and_its_task_retried(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    seen: list[sky.Event] = []
    with runpod_pool(runpod_api, nodes=2, accelerator="A100", reconcile_tick_interval=0.5,
                     on_event=preemption_events(seen)) as pool:
        run = preempt_node_1(pool, tmp_path / "first-attempt", runpod_api.interrupt, timeout=120)
    assert_replaced_and_retried(seen, run, "reclaimed by RunPod", "pod")
    assert run.old in runpod_api.deleted and runpod_api.pods == {}


def test_a_reclaimed_pod_that_cannot_be_replaced_fails_its_pinned_task_and_the_pool_goes_on(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    errors: list[sky.Error] = []
    marker = tmp_path / "first-attempt"
    with runpod_pool(runpod_api, nodes=2, accelerator="A100", reconcile_tick_interval=0.5,
                     provision_timeout=2,
                     on_event=lambda e: errors.append(e) if isinstance(e, sky.Error) else None) as pool:
        old = (instance_id() @ pool)[1]
        future = pool.run_async(double_slowly_the_first_time(21, str(marker)), target=1)
        assert wait_until(marker.exists, 30), "the task never started"
        runpod_api.no_capacity.update({"interruptible", "on-demand"})
        runpod_api.interrupt(old)
        with pytest.raises(sky.NodeLostError, match="pinned to node 1, which was preempted and could not be"):
            future.result(timeout=60)
        assert pool.current_nodes() == 1
        assert instance_id() >> pool != old
    assert [e.node for e in errors if "node 1 could not be replaced" in e.message and not e.fatal] == [1]
    assert old in runpod_api.deleted and runpod_api.pods == {}
