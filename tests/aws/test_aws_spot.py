"""A spot interruption notice on an AWS node (read from its instance metadata, IMDSv2): the pool
says the machine was preempted, replaces it with a new one in the same node slot, and runs the
task it had in flight again there, with the right result."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from aws_cloud import NOTHING_LEFT, FaultProxy, Machines, Network, aws_provider, tagged
from fake_imds import ACTION, FakeIMDS

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


def states(ec2: Any, ids: list[str]) -> set[str]:
    rows = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {i["State"]["Name"] for r in rows for i in r["Instances"]}


def test_a_spot_interruption_notice_replaces_the_machine_and_retries_its_task(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, imds: FakeIMDS, skyward_home: Path,
    tmp_path: Path,
) -> None:
    provider = aws_provider(faults, network, machines, metadata_url=imds.url)
    seen: list[sky.Event] = []
    kinds = (sky.InstancePreempted, sky.InstanceReplaced, sky.TaskRetried)
    marker = tmp_path / "first-attempt"
    with sky.Compute(provider=provider, nodes=2, console=False, logging=False, reconcile_tick_interval=0.5,
                     on_event=lambda e: seen.append(e) if isinstance(e, kinds) else None) as pool:
        before = instance_id() @ pool  # by node index
        old = before[1]
        future = pool.run_async(double_slowly_the_first_time(21, str(marker)), target=1)
        assert wait_for(marker.exists, 30), "the task never started"
        assert wait_for(lambda: (old, ACTION) in imds.asked, 30), "node 1 never read its spot notice"
        imds.interrupt(old)
        value, ran_on = future.result(timeout=180)
        after = instance_id() @ pool
        pool_id = pool.name
    assert value == 42
    assert ran_on != old and ran_on == after[1], "the retry did not run on the new machine"
    assert after[0] == before[0] and after[1] not in before
    preempted = [e for e in seen if isinstance(e, sky.InstancePreempted)]
    assert [(e.node, e.instance_id) for e in preempted] == [(1, old)]
    assert "spot interruption notice: terminate" in preempted[0].reason
    replaced = [e for e in seen if isinstance(e, sky.InstanceReplaced)]
    assert [(e.node, e.old_id, e.new_id) for e in replaced] == [(1, old, ran_on)]
    assert [(e.node, e.attempt) for e in seen if isinstance(e, sky.TaskRetried)] == [(1, 1)]
    assert states(ec2, [old, ran_on]) == {"terminated"}
    assert tagged(ec2, pool_id) == NOTHING_LEFT
