"""`sky ls` and `sky down` against the fake Verda API: VMs found by their Skyward hostname, and no other.

The VMs are put in the fake's account as a crashed client leaves them (hostname
`skyward-<pool>-<node>`, with the pool's startup scripts and login key beside them), next to a VM
of someone else's; `sky` runs as a subprocess pointed at the fake with `$VERDA_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_verda import FakeVerda
from verda_support import CLIENT_ID, CLIENT_SECRET

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeVerda, pool: str, node: int, vm_id: str) -> str:
    api.instances[vm_id] = {
        "id": vm_id, "hostname": f"skyward-{pool}-{node}", "status": "running", "instance_type": "1A100.22V",
        "price_per_hour": 1.29, "location": "FIN-01", "is_spot": False, "created_at": "2026-11-25T10:00:00Z",
    }
    script = f"script-{vm_id}"
    api.scripts[script] = {"id": script, "name": f"skyward-{pool}-{node}", "script": "#"}
    api.ssh_keys[f"key-{pool}"] = {"id": f"key-{pool}", "name": f"skyward-{pool}", "key": "ssh-ed25519 AAAA"}
    return vm_id


@pytest.fixture
def sky(tmp_path: Path, verda_api: FakeVerda) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(
        VERDA_CLIENT_ID=CLIENT_ID, VERDA_CLIENT_SECRET=CLIENT_SECRET, VERDA_API_URL=verda_api.url
    )
    theirs = {"id": "vm-theirs", "hostname": "skyward-notes", "status": "running"}
    # named like Skyward's, but no `skyward-<pool>-<node>`
    with beside_theirs(verda_api.instances, theirs, "VM"):
        yield runner
    verda_api.scripts.clear()
    verda_api.ssh_keys.clear()


def test_ls_lists_the_vms_skyward_named_and_no_other(sky: Sky, verda_api: FakeVerda) -> None:
    ours = [leftover(verda_api, "crashed1", 0, "vm-a"), leftover(verda_api, "crashed1", 1, "vm-b")]
    listed = sky.json("ls", "--provider", "verda")["machines"]
    assert sorted(m["id"] for m in listed) == ours
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"], m["hourly_price"]) for m in listed}
    assert seen == {("Verda", "crashed1", "1A100.22V", "FIN-01", 1.29)}
    verda_api.instances.pop("vm-a"), verda_api.instances.pop("vm-b")


def test_down_pool_deletes_that_pools_vms_scripts_and_key_only(sky: Sky, verda_api: FakeVerda) -> None:
    leftover(verda_api, "first1", 0, "vm-a")
    leftover(verda_api, "second2", 0, "vm-c")
    done = sky("down", "first1", "--yes", "--provider", "verda")
    assert done.returncode == 0, done.stderr
    assert verda_api.deleted == ["vm-a"]
    assert sorted(verda_api.instances) == ["vm-c", "vm-theirs"]
    assert sorted(verda_api.scripts) == ["script-vm-c"] and sorted(verda_api.ssh_keys) == ["key-second2"]
    verda_api.instances.pop("vm-c")


def test_providers_check_verifies_the_credentials_with_one_login(sky: Sky, verda_api: FakeVerda) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "verda")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", VERDA_CLIENT_SECRET="vsec_WRONG")
    assert refused.returncode == 1 and "verda" in refused.stderr.lower()
