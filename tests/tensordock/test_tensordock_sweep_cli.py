"""`sky ls`, `sky down`, `sky providers --check` and `sky offers` against the fake TensorDock
marketplace: VMs found by their Skyward name and no other, hostnodes' GPUs priced.

The VMs are put in the fake's account as a crashed client leaves them (named
`skyward-<pool>-<node>`), next to a VM of someone else's; `sky` runs as a subprocess pointed at the
fake with `$TENSORDOCK_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_tensordock import FakeTensorDock
from tensordock_support import API_KEY, API_TOKEN

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


@pytest.fixture
def sky(tmp_path: Path, tensordock_api: FakeTensorDock) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(
        TENSORDOCK_API_KEY=API_KEY, TENSORDOCK_API_TOKEN=API_TOKEN, TENSORDOCK_API_URL=tensordock_api.url
    )
    # named like Skyward's, but no `skyward-<pool>-<node>`
    theirs = {"id": "vm-theirs", "name": "skyward-notes", "status": "Running", "hostnode": "hn-chicago"}
    with beside_theirs(tensordock_api.vms, theirs, "VM"):
        yield runner


def test_ls_lists_the_vms_skyward_named_and_down_deletes_one_pools_only(
    sky: Sky, tensordock_api: FakeTensorDock
) -> None:
    ours = [tensordock_api.leftover("crashed1", 0, "vm-a"), tensordock_api.leftover("crashed1", 1, "vm-b")]
    tensordock_api.leftover("second2", 0, "vm-c")
    listed = sky.json("ls", "--provider", "tensordock")["machines"]
    assert sorted(m["id"] for m in listed) == [*ours, "vm-c"]
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"], m["hourly_price"]) for m in listed}
    assert ("TensorDock", "crashed1", "geforcertx4090-pcie-24gb", "Chicago, United States", 0.7) in seen
    done = sky("down", "crashed1", "--yes", "--provider", "tensordock")
    assert done.returncode == 0, done.stderr
    assert sorted(tensordock_api.deleted) == ours
    assert sorted(tensordock_api.vms) == ["vm-c", "vm-theirs"]
    tensordock_api.vms.pop("vm-c")


def test_providers_check_verifies_the_pair_with_one_listing(sky: Sky) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "tensordock")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", TENSORDOCK_API_TOKEN="tdtoken-WRONG")
    assert refused.returncode == 1 and "tensordock" in refused.stderr.lower()


def test_sky_offers_lists_each_hostnodes_gpus_priced_as_a_pool_deploys_them(sky: Sky) -> None:
    listing = sky.json("offers", "--provider", "tensordock", "--accelerator", "RTX_4090")
    offers = {(o["region"], o["accelerator_count"]): o for o in listing["offers"]}
    assert set(offers) == {
        ("Winnipeg, Canada", 1),
        ("Winnipeg, Canada", 2),
        ("Chicago, United States", 1),
        ("Chicago, United States", 2),
        ("Chicago, United States", 4),
    }
    one = offers[("Winnipeg, Canada", 1)]
    assert (one["instance_type"], one["accelerator_memory_gb"], one["spot_price"]) == (
        "geforcertx4090-pcie-24gb",
        24.0,
        None,
    )
    # one GPU, 4 vCPUs, 16 GB RAM and 100 GB disk at the host's unit prices
    assert one["on_demand_price"] == pytest.approx(0.35 + 4 * 0.003 + 16 * 0.002 + 100 * 0.00005)
