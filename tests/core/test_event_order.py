"""Every documented event, at its moment, on `sky.Local` (docs/observability.md, "Events")."""

from __future__ import annotations

from typing import Any

from event_order import IMAGE_METRICS, WORKER_NODE, assert_lifecycle, lifecycle_workload

import skyward as sky


def test_a_local_pool_emits_every_documented_event_in_order() -> None:
    events: list[Any] = []
    image = sky.Image(metrics=IMAGE_METRICS)
    with sky.Compute(
        provider=sky.Local(isolated=True), nodes=2, image=image, console=False, logging=False,
        on_event=events.append,
    ) as pool:
        lifecycle_workload(pool, 2)
    assert_lifecycle(events, 2, WORKER_NODE)
