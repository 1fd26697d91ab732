"""One pool never ends another's machines: each pool has an id of its own (its label plus random
digits), and a pool's clean-up matches its machines by that whole id, never by a prefix
(`cloud_workloads` holds the two cases, run here on the fake API).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cloud_workloads import assert_a_pool_leaves_the_machines_of_a_label_extending_its_own as extends
from cloud_workloads import assert_two_pools_of_one_label_keep_apart as same_label
from fake_runpod import FakeRunPod
from runpod_support import runpod, runpod_pool

from skyward.providers.base import Cluster
from skyward_runpod.provider import RunPodProvider


@pytest.mark.parametrize("case", [extends, same_label], ids=["label-extends-its-own", "same-label"])
def test_a_pools_end_leaves_the_machines_of_another_pool(runpod_api: FakeRunPod, case: Any) -> None:
    case(lambda **kwargs: runpod_pool(runpod_api, **kwargs), lambda: set(runpod_api.pods), "A100")


def test_the_clean_up_takes_the_pods_of_exactly_its_pool_id(runpod_api: FakeRunPod) -> None:
    for pod_id, name in (("a", "skyward-train-0"), ("b", "skyward-train-2-0"), ("c", "skyward-train-1")):
        runpod_api.pods[pod_id] = {"id": pod_id, "name": name, "desiredStatus": "RUNNING", "env": {}}
    provider = RunPodProvider(runpod(runpod_api))
    try:
        left = asyncio.run(provider.leftovers(Cluster(id="train", provider="runpod", spec=None)))
    finally:
        for pod_id in ("a", "b", "c"):
            runpod_api.pods.pop(pod_id, None)
    assert sorted(i.id for i in left) == ["a", "c"]
