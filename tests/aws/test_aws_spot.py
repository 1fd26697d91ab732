"""A spot interruption notice on an AWS node (read from its instance metadata, IMDSv2): the pool
says the machine was preempted, replaces it with a new one in the same node slot, and runs the
task it had in flight again there, with the right result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cloud import NOTHING_LEFT, FaultProxy, Machines, Network, aws_provider, tagged
from cloud_workloads import assert_replaced_and_retried, preempt_node_1, preemption_events
from fake_imds import ACTION, FakeIMDS
from ssh_hosts import wait_until

import skyward as sky


def states(ec2: Any, ids: list[str]) -> set[str]:
    rows = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {i["State"]["Name"] for r in rows for i in r["Instances"]}


def test_a_spot_interruption_notice_replaces_the_machine_and_retries_its_task(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, imds: FakeIMDS, skyward_home: Path,
    tmp_path: Path,
) -> None:
    provider = aws_provider(faults, network, machines, metadata_url=imds.url)
    seen: list[sky.Event] = []

    def interrupt(old: str) -> None:
        assert wait_until(lambda: (old, ACTION) in imds.asked, 30), "node 1 never read its spot notice"
        imds.interrupt(old)

    with sky.Compute(provider=provider, nodes=2, console=False, logging=False, reconcile_tick_interval=0.5,
                     on_event=preemption_events(seen)) as pool:
        run = preempt_node_1(pool, tmp_path / "first-attempt", interrupt, timeout=180)
        pool_id = pool.name
    assert_replaced_and_retried(seen, run, "spot interruption notice: terminate", "machine")
    assert run.after[1] not in run.before
    assert states(ec2, [run.old, run.ran_on]) == {"terminated"}
    assert tagged(ec2, pool_id) == NOTHING_LEFT
