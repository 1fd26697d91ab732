"""One pool never ends another's pods: each pool has an id of its own (its label plus random
digits), and a pool's clean-up matches its pods by that whole id, never by a prefix.

Reproduced as a user meets it on the fake RunPod: a pool labelled `train-2` runs while a pool
labelled `train` starts and ends, and a script's pool runs while the same script starts again.
"""

from __future__ import annotations

import asyncio

from cloud_workloads import square
from fake_runpod import FakeRunPod
from runpod_support import runpod, runpod_pool

from skyward.providers.base import Cluster
from skyward_runpod.provider import RunPodProvider


def test_ending_a_pool_leaves_the_pods_of_a_pool_whose_label_extends_its_own(runpod_api: FakeRunPod) -> None:
    with runpod_pool(runpod_api, label="train-2", accelerator="A100") as other:
        theirs = set(runpod_api.pods)
        with runpod_pool(runpod_api, label="train", accelerator="A100") as pool:
            assert square(2) >> pool == 4
        assert theirs <= set(runpod_api.pods), "ending `train` deleted the pods of `train-2`"
        assert square(3) >> other == 9


def test_two_pools_of_one_label_keep_apart(runpod_api: FakeRunPod) -> None:
    with runpod_pool(runpod_api, label="train", accelerator="A100") as first:
        theirs = set(runpod_api.pods)
        with runpod_pool(runpod_api, label="train", accelerator="A100") as second:
            assert first.id != second.id and first.name == second.name == "train"
            assert square(2) >> second == 4
        assert theirs <= set(runpod_api.pods), "the second `train` deleted the first's pods"
        assert square(3) >> first == 9


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
