"""`sky ls` and `sky down` against the fake Infrahub API: VMs found by their Skyward name, and no other.

The VMs are put in the fake's account as a crashed client leaves them (named
`skyward-<pool>-<node>`, with the pool's keypair beside them), next to a VM of someone else's;
`sky` runs as a subprocess pointed at the fake with `$HYPERSTACK_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_infrahub import FakeInfrahub
from hyperstack_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402

ENVIRONMENT = {"id": 1, "name": "skyward-canada-1", "region": "CANADA-1"}


def leftover(api: FakeInfrahub, pool: str, node: int, vm_id: int) -> int:
    api.vms[vm_id] = {
        "id": vm_id,
        "name": f"skyward-{pool}-{node}",
        "status": "ACTIVE",
        "environment": ENVIRONMENT,
        "flavor": {"name": "n3-A100x1", "gpu": "A100-80G-PCIe", "gpu_count": 1},
        "created_at": "2026-11-25T10:00:00",
    }
    key_id = 900 + len(api.keypairs)
    if not any(k["name"] == f"skyward-{pool}" for k in api.keypairs.values()):
        api.keypairs[key_id] = {"id": key_id, "name": f"skyward-{pool}", "environment": ENVIRONMENT}
    return vm_id


@pytest.fixture
def sky(tmp_path: Path, hyperstack_api: FakeInfrahub) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(HYPERSTACK_API_KEY=API_KEY, HYPERSTACK_API_URL=hyperstack_api.url)
    theirs = {"id": 77, "name": "skyward-notes", "status": "ACTIVE", "environment": ENVIRONMENT}
    # named like Skyward's, but no `skyward-<pool>-<node>`
    with beside_theirs(hyperstack_api.vms, theirs, "VM"):
        yield runner
    hyperstack_api.keypairs.clear()


def test_ls_lists_the_vms_skyward_named_and_no_other(sky: Sky, hyperstack_api: FakeInfrahub) -> None:
    ours = [leftover(hyperstack_api, "crashed1", 0, 11), leftover(hyperstack_api, "crashed1", 1, 12)]
    listed = sky.json("ls", "--provider", "hyperstack")["machines"]
    assert sorted(int(m["id"]) for m in listed) == ours
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"], m["hourly_price"]) for m in listed}
    assert seen == {("Hyperstack", "crashed1", "n3-A100x1", "CANADA-1", 1.35)}  # 1x A100 at the pricebook's
    hyperstack_api.vms.pop(11), hyperstack_api.vms.pop(12)


def test_down_pool_deletes_that_pools_vms_and_keypair_only(sky: Sky, hyperstack_api: FakeInfrahub) -> None:
    leftover(hyperstack_api, "first1", 0, 21)
    leftover(hyperstack_api, "second2", 0, 31)
    done = sky("down", "first1", "--yes", "--provider", "hyperstack")
    assert done.returncode == 0, done.stderr
    assert hyperstack_api.deleted_vms == [21]
    assert sorted(hyperstack_api.vms) == [31, 77]
    assert [k["name"] for k in hyperstack_api.keypairs.values()] == ["skyward-second2"]
    hyperstack_api.vms.pop(31)


def test_providers_check_verifies_the_key_with_one_listing(sky: Sky, hyperstack_api: FakeInfrahub) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "hyperstack")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", HYPERSTACK_API_KEY="hs-WRONG")
    assert refused.returncode == 1 and "hyperstack" in refused.stderr.lower()
