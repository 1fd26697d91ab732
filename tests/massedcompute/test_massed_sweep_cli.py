"""`sky ls` and `sky down` against the fake Massed Compute API: machines found by their Skyward
name, and no other.

The machines are put in the fake's account as a crashed client leaves them (named
`skyward-<pool>-<node>`), next to a machine of someone else's; `sky` runs as a subprocess pointed
at the fake with `$MASSED_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_massed import FakeMassed
from massed_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeMassed, pool: str, node: int, uuid: str) -> str:
    api.instances[uuid] = {
        "uuid": uuid,
        "name": f"skyward-{pool}-{node}",
        "status": "rented",
        "ip": "192.0.2.1",
        "product_name": "gpu_1x_l40",
        "region": "us-central-3",
        "price_cents_per_hour": 99,
        "created": "2026-11-25T10:00:00.000Z",
        "os_booted": 1,
    }
    return uuid


@pytest.fixture
def sky(tmp_path: Path, massed_api: FakeMassed) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(MASSED_API_KEY=API_KEY, MASSED_API_URL=massed_api.url)
    # named like Skyward's, but no `skyward-<pool>-<node>`
    theirs = {"id": "vm-theirs", "uuid": "vm-theirs", "name": "skyward-notes", "status": "rented"}
    with beside_theirs(massed_api.instances, theirs, "machine"):
        yield runner


def test_ls_lists_the_machines_skyward_named_and_no_other(sky: Sky, massed_api: FakeMassed) -> None:
    ours = [leftover(massed_api, "crashed1", 0, "vm-a"), leftover(massed_api, "crashed1", 1, "vm-b")]
    listed = sky.json("ls", "--provider", "massedcompute")["machines"]
    assert sorted(m["id"] for m in listed) == ours
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"], m["hourly_price"]) for m in listed}
    assert seen == {("MassedCompute", "crashed1", "gpu_1x_l40", "us-central-3", 0.99)}
    massed_api.instances.pop("vm-a"), massed_api.instances.pop("vm-b")


def test_down_pool_terminates_that_pools_machines_only(sky: Sky, massed_api: FakeMassed) -> None:
    leftover(massed_api, "first1", 0, "vm-a")
    leftover(massed_api, "second2", 0, "vm-c")
    done = sky("down", "first1", "--yes", "--provider", "massedcompute")
    assert done.returncode == 0, done.stderr
    assert massed_api.terminated == ["vm-a"]
    assert sorted(massed_api.instances) == ["vm-c", "vm-theirs"]
    massed_api.instances.pop("vm-c")


def test_providers_check_verifies_the_key_with_one_listing(sky: Sky, massed_api: FakeMassed) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "massedcompute")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", MASSED_API_KEY="massed_WRONG")
    assert refused.returncode == 1 and "massed" in refused.stderr.lower()
