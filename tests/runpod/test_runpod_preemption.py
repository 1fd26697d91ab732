"""An interruptible pod that RunPod takes back (the API reports it EXITED, its container is gone):
the pool says it was preempted, puts a new pod in its node slot, and runs the task it had in
flight again there, with the right result; when no new pod can be had, the tasks pinned to that
node fail by name and the pool goes on with the nodes it has."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from fake_runpod import FakeRunPod
from runpod_support import runpod_pool

import skyward as sky


@sky.function
def double_slowly_the_first_time(x: int, marker: str) -> tuple[int, str]:
    """The first attempt announces itself and stays in flight; a retry answers at once."""
    if not os.path.exists(marker):
        Path(marker).write_text("started")
        time.sleep(120)
    return 2 * x, sky.instance_info().id


@sky.function
def instance_id() -> str:
    return sky.instance_info().id


def wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_reclaimed_interruptible_pod_is_replaced_and_its_task_retried(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    seen: list[sky.Event] = []
    kinds = (sky.InstancePreempted, sky.InstanceReplaced, sky.TaskRetried)
    marker = tmp_path / "first-attempt"
    with runpod_pool(runpod_api, nodes=2, accelerator="A100", reconcile_tick_interval=0.5,
                     on_event=lambda e: seen.append(e) if isinstance(e, kinds) else None) as pool:
        before = instance_id() @ pool  # by node index
        old = before[1]
        future = pool.run_async(double_slowly_the_first_time(21, str(marker)), target=1)
        assert wait_for(marker.exists, 30), "the task never started"
        runpod_api.interrupt(old)
        value, ran_on = future.result(timeout=120)
        after = instance_id() @ pool
    assert value == 42
    assert ran_on != old and ran_on == after[1], "the retry did not run on the new pod"
    assert after[0] == before[0]
    preempted = [e for e in seen if isinstance(e, sky.InstancePreempted)]
    assert [(e.node, e.instance_id) for e in preempted] == [(1, old)]
    assert "reclaimed by RunPod" in preempted[0].reason
    replaced = [e for e in seen if isinstance(e, sky.InstanceReplaced)]
    assert [(e.node, e.old_id, e.new_id) for e in replaced] == [(1, old, ran_on)]
    assert [(e.node, e.attempt) for e in seen if isinstance(e, sky.TaskRetried)] == [(1, 1)]
    assert old in runpod_api.deleted and runpod_api.pods == {}


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
        assert wait_for(marker.exists, 30), "the task never started"
        runpod_api.no_capacity.update({"interruptible", "on-demand"})
        runpod_api.interrupt(old)
        with pytest.raises(sky.NodeLostError, match="pinned to node 1, which was preempted and could not be"):
            future.result(timeout=60)
        assert pool.current_nodes() == 1
        assert instance_id() >> pool != old
    assert [e.node for e in errors if "node 1 could not be replaced" in e.message and not e.fatal] == [1]
    assert old in runpod_api.deleted and runpod_api.pods == {}
