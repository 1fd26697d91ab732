"""A bid (interruptible) Vast instance that is outbid (Vast stops it while a higher bid holds its
machine): the pool says it was preempted, rents a new instance for its node slot, and runs the
task it had in flight again there, with the right result."""

from __future__ import annotations

from pathlib import Path

from cloud_workloads import assert_replaced_and_retried, preempt_node_1, preemption_events
from vast_server import FakeVast
from vast_support import vast_pool

import skyward as sky


def test_an_outbid_instance_is_replaced_and_its_task_retried(vast: FakeVast, tmp_path: Path) -> None:
    seen: list[sky.Event] = []
    with vast_pool(vast, nodes=2, accelerator="RTX 4090", allocation="spot", max_hourly_cost=1.0,
                   reconcile_tick_interval=0.5, on_event=preemption_events(seen)) as pool:
        run = preempt_node_1(pool, tmp_path / "first-attempt", lambda old: vast.outbid(int(old)), timeout=120)
    assert_replaced_and_retried(seen, run, "outbid", "instance")
    assert int(run.old) in vast.destroyed and vast.live == []
