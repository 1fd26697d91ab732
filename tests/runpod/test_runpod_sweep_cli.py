"""`sky ls` and `sky down` against the fake RunPod API: pods found by their Skyward name, and no other.

The pods are put in the fake's account as a crashed client leaves them (named `skyward-<pool>-<node>`,
with `SKYWARD_POOL` in their environment), beside a pod of someone else's; `sky` runs as a
subprocess pointed at the fake with `$RUNPOD_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_runpod import FakeRunPod
from runpod_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeRunPod, pool: str, node: int, pod_id: str) -> str:
    api.pods[pod_id] = {
        "id": pod_id, "name": f"skyward-{pool}-{node}", "desiredStatus": "RUNNING",
        "env": {"SKYWARD_POOL": pool}, "interruptible": False, "costPerHr": "0.44",
        "adjustedCostPerHr": 0.44, "gpuCount": 1, "vcpuCount": 8,
        "gpu": {"id": "NVIDIA A40", "count": 1, "displayName": "A40"},
        "machine": {"dataCenterId": "EU-RO-1"}, "lastStartedAt": "2026-11-25T10:00:00Z",
    }
    return pod_id


@pytest.fixture
def sky(tmp_path: Path, runpod_api: FakeRunPod) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(RUNPOD_API_KEY=API_KEY, RUNPOD_API_URL=runpod_api.rest_url)
    theirs = {"id": "podTHEIRS", "name": "skyward-notes", "desiredStatus": "RUNNING", "env": {}}
    # named like Skyward's, but no `skyward-<pool>-<node>`
    with beside_theirs(runpod_api.pods, theirs, "pod"):
        yield runner


def test_ls_lists_the_pods_skyward_named_and_no_other(sky: Sky, runpod_api: FakeRunPod) -> None:
    ours = [leftover(runpod_api, "crashed1", 0, "podA"), leftover(runpod_api, "crashed1", 1, "podB")]
    listed = sky.json("ls", "--provider", "runpod")["machines"]
    assert sorted(m["id"] for m in listed) == ours
    assert {(m["provider"], m["pool"], m["instance_type"], m["region"], m["hourly_price"])
            for m in listed} == {
        ("RunPod", "crashed1", "1x A40", "EU-RO-1", 0.44)
    }
    assert all(m["spent"] > 0 and m["lease_expires"] is None for m in listed)
    runpod_api.pods.pop("podA"), runpod_api.pods.pop("podB")


def test_a_pod_whose_name_and_environment_disagree_is_not_skywards(sky: Sky, runpod_api: FakeRunPod) -> None:
    leftover(runpod_api, "crashed1", 0, "podA")
    runpod_api.pods["podA"]["env"] = {"SKYWARD_POOL": "other"}
    assert sky.json("ls", "--provider", "runpod")["machines"] == []
    runpod_api.pods.pop("podA")


def test_down_pool_deletes_that_pools_pods_only(sky: Sky, runpod_api: FakeRunPod) -> None:
    leftover(runpod_api, "first1", 0, "podA")
    leftover(runpod_api, "first1", 1, "podB")
    leftover(runpod_api, "second2", 0, "podC")
    done = sky("down", "first1", "--yes", "--provider", "runpod")
    assert done.returncode == 0, done.stderr
    assert sorted(runpod_api.deleted) == ["podA", "podB"]
    assert sorted(runpod_api.pods) == ["podC", "podTHEIRS"]
    runpod_api.pods.pop("podC")


def test_down_all_deletes_every_skyward_pod_but_never_another(sky: Sky, runpod_api: FakeRunPod) -> None:
    leftover(runpod_api, "first1", 0, "podA")
    leftover(runpod_api, "second2", 0, "podC")
    done = sky("down", "--all", "--yes", "--provider", "runpod")
    assert done.returncode == 0, done.stderr
    assert sorted(runpod_api.deleted) == ["podA", "podC"]
    assert sorted(runpod_api.pods) == ["podTHEIRS"]


def test_down_expired_leaves_runpod_alone_as_its_pods_have_no_lease(sky: Sky, runpod_api: FakeRunPod) -> None:
    leftover(runpod_api, "first1", 0, "podA")
    done = sky("down", "--expired", "--yes", "--provider", "runpod")
    assert done.returncode == 0, done.stderr
    assert runpod_api.deleted == []
    runpod_api.pods.pop("podA")


def test_down_by_label_ends_the_pool_of_that_label_and_not_one_whose_label_extends_it(
    sky: Sky, runpod_api: FakeRunPod
) -> None:
    leftover(runpod_api, "train-1a2b3c4d", 0, "podA")
    leftover(runpod_api, "train-2-5e6f7a8b", 0, "podB")
    done = sky("down", "train", "--yes", "--provider", "runpod")
    assert done.returncode == 0, done.stderr
    assert runpod_api.deleted == ["podA"]
    assert sorted(runpod_api.pods) == ["podB", "podTHEIRS"]
    runpod_api.pods.pop("podB")


def test_down_by_a_label_two_pools_share_asks_and_names_their_ids_without_a_terminal(
    sky: Sky, runpod_api: FakeRunPod
) -> None:
    leftover(runpod_api, "train-1a2b3c4d", 0, "podA")
    leftover(runpod_api, "train-9f9f9f9f", 0, "podB")
    refused = sky("down", "train", "--provider", "runpod")
    assert refused.returncode != 0
    assert "2 pools are labelled 'train': train-1a2b3c4d, train-9f9f9f9f" in refused.stderr
    assert runpod_api.deleted == []
    by_id = sky("down", "train-9f9f9f9f", "--yes", "--provider", "runpod")
    assert by_id.returncode == 0, by_id.stderr
    assert runpod_api.deleted == ["podB"]
    both = sky("down", "train", "--yes", "--provider", "runpod")
    assert both.returncode == 0, both.stderr
    assert sorted(runpod_api.deleted) == ["podA", "podB"]
