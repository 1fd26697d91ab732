"""`sky ls` and `sky down` against the fake Lambda API: VMs found by their Skyward name, and no other.

The VMs are put in the fake's account as a crashed client leaves them (name
`skyward-<pool>-<node>`, with the pool's login key beside them), next to a VM of someone else's;
`sky` runs as a subprocess pointed at the fake with `$LAMBDA_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_lambda import INSTANCE_TYPES, FakeLambda
from lambda_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeLambda, pool: str, node: int, vm_id: str) -> str:
    api.instances[vm_id] = {
        "id": vm_id, "name": f"skyward-{pool}-{node}", "status": "active", "ip": "192.0.2.7",
        "region": {"name": "us-east-1", "description": "Virginia, USA"},
        "instance_type": INSTANCE_TYPES["gpu_1x_h100_pcie"]["instance_type"],
    }
    key = {"id": f"key-{pool}", "name": f"skyward-{pool}", "public_key": "ssh-ed25519 AAAA"}
    api.ssh_keys[key["id"]] = key
    return vm_id


@pytest.fixture
def sky(tmp_path: Path, lambda_api: FakeLambda) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(LAMBDA_API_KEY=API_KEY, LAMBDA_API_URL=lambda_api.url)
    theirs = {"id": "vm-theirs", "name": "skyward-notes", "status": "active"}  # named alike, not a pool's
    with beside_theirs(lambda_api.instances, theirs, "VM"):
        yield runner
    lambda_api.ssh_keys.clear()


def test_ls_lists_the_vms_skyward_named_and_no_other(sky: Sky, lambda_api: FakeLambda) -> None:
    ours = [leftover(lambda_api, "crashed1", 0, "vm-a"), leftover(lambda_api, "crashed1", 1, "vm-b")]
    listed = sky.json("ls", "--provider", "lambda")["machines"]
    assert sorted(m["id"] for m in listed) == ours
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"], m["hourly_price"]) for m in listed}
    assert seen == {("Lambda", "crashed1", "gpu_1x_h100_pcie", "us-east-1", 2.49)}
    lambda_api.instances.pop("vm-a"), lambda_api.instances.pop("vm-b")


def test_down_pool_terminates_that_pools_vms_and_deletes_its_key_only(
    sky: Sky, lambda_api: FakeLambda
) -> None:
    leftover(lambda_api, "first1", 0, "vm-a")
    leftover(lambda_api, "second2", 0, "vm-c")
    done = sky("down", "first1", "--yes", "--provider", "lambda")
    assert done.returncode == 0, done.stderr
    assert lambda_api.terminated == ["vm-a"]
    assert sorted(lambda_api.instances) == ["vm-c", "vm-theirs"]
    assert sorted(lambda_api.ssh_keys) == ["key-second2"]
    lambda_api.instances.pop("vm-c")


def test_providers_check_verifies_the_key_with_one_listing(sky: Sky) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "lambdacloud")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", LAMBDA_API_KEY="secret_WRONG")
    assert refused.returncode == 1 and "lambda" in refused.stderr.lower()
