"""A bid (interruptible) Vast instance that is outbid (Vast stops it while a higher bid holds its
machine): the pool says it was preempted, rents a new instance for its node slot, and runs the
task it had in flight again there, with the right result."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from vast_server import FakeVast
from vast_support import vast_pool

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


def test_an_outbid_instance_is_replaced_and_its_task_retried(vast: FakeVast, tmp_path: Path) -> None:
    seen: list[sky.Event] = []
    kinds = (sky.InstancePreempted, sky.InstanceReplaced, sky.TaskRetried)
    marker = tmp_path / "first-attempt"
    with vast_pool(vast, nodes=2, accelerator="RTX 4090", allocation="spot", max_hourly_cost=1.0,
                   reconcile_tick_interval=0.5,
                   on_event=lambda e: seen.append(e) if isinstance(e, kinds) else None) as pool:
        before = instance_id() @ pool  # by node index
        old = before[1]
        future = pool.run_async(double_slowly_the_first_time(21, str(marker)), target=1)
        assert wait_for(marker.exists, 30), "the task never started"
        vast.outbid(int(old))
        value, ran_on = future.result(timeout=120)
        after = instance_id() @ pool
    assert value == 42
    assert ran_on != old and ran_on == after[1], "the retry did not run on the new instance"
    assert after[0] == before[0]
    preempted = [e for e in seen if isinstance(e, sky.InstancePreempted)]
    assert [(e.node, e.instance_id) for e in preempted] == [(1, old)]
    assert "outbid" in preempted[0].reason
    replaced = [e for e in seen if isinstance(e, sky.InstanceReplaced)]
    assert [(e.node, e.old_id, e.new_id) for e in replaced] == [(1, old, ran_on)]
    assert [(e.node, e.attempt) for e in seen if isinstance(e, sky.TaskRetried)] == [(1, 1)]
    assert int(old) in vast.destroyed and vast.live == []
