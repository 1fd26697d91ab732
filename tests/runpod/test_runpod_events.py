"""Every documented event, at its moment, on a cloud: the fake RunPod (docs/observability.md)."""

from __future__ import annotations

from typing import Any

from event_order import CLOUD_NODE, IMAGE_METRICS, assert_lifecycle, lifecycle_workload
from fake_runpod import FakeRunPod
from runpod_support import runpod_pool

import skyward as sky


def test_a_runpod_pool_emits_every_documented_event_in_order(runpod_api: FakeRunPod) -> None:
    events: list[Any] = []
    image = sky.Image(metrics=IMAGE_METRICS)
    with runpod_pool(runpod_api, nodes=2, accelerator="A100", image=image, on_event=events.append) as pool:
        lifecycle_workload(pool, 2)
    assert_lifecycle(events, 2, CLOUD_NODE)
