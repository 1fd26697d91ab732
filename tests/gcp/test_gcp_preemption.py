"""A spot VM's preemption notice (its metadata server's `instance/preempted` turning TRUE): the pool
says the VM was preempted, replaces it with a new one in the same node slot, and runs the task it
had in flight again there, with the right result."""

from __future__ import annotations

from pathlib import Path

from cloud_workloads import assert_replaced_and_retried, preempt_node_1, preemption_events
from fake_gcp import FakeGCP
from gcp_support import gcp_pool
from ssh_hosts import wait_until

import skyward as sky

PREEMPTED = "instance/preempted"


def test_a_preempted_spot_vm_is_replaced_and_its_task_retried(gcp_api: FakeGCP, tmp_path: Path) -> None:
    seen: list[sky.Event] = []

    def preempt(old: str) -> None:
        assert wait_until(lambda: (gcp_api.key(old), PREEMPTED) in gcp_api.metadata_asked, 30), "never asked"
        gcp_api.preempt(old)

    compute = gcp_pool(
        gcp_api,
        nodes=2,
        accelerator="T4",
        allocation="spot",
        reconcile_tick_interval=0.5,
        on_event=preemption_events(seen),
    )
    with compute as pool:
        run = preempt_node_1(pool, tmp_path / "first-attempt", preempt, timeout=180)
    assert_replaced_and_retried(seen, run, "spot VM preempted", "VM")
    assert gcp_api.deleted[0] == gcp_api.key(run.old), "the preempted VM is deleted first"
    assert sorted(gcp_api.deleted[1:]) == sorted(gcp_api.key(i) for i in run.after)
