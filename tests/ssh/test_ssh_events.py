"""Every documented event, at its moment, on `sky.SSH` (docs/observability.md, "Events")."""

from __future__ import annotations

from typing import Any

from event_order import IMAGE_METRICS, WORKER_NODE, assert_lifecycle, lifecycle_workload
from ssh_hosts import SSHHosts, ssh_pool

import skyward as sky


def test_an_ssh_pool_emits_every_documented_event_in_order(ssh_hosts: SSHHosts) -> None:
    events: list[Any] = []
    with ssh_pool(ssh_hosts, image=sky.Image(metrics=IMAGE_METRICS), on_event=events.append) as pool:
        lifecycle_workload(pool, 2)
    assert_lifecycle(events, 2, WORKER_NODE)
