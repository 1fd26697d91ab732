"""`sky ls` and `sky down` against the fake Vultr API: instances found by Skyward's tag and label,
and no other.

The instances are put in the fake's account as a crashed client leaves them (tag `skyward`, label
`skyward-<pool>-<node>`, with the pool's login key and firewall group beside them), next to an
instance of someone else's labelled like Skyward's but untagged; `sky` runs as a subprocess
pointed at the fake with `$VULTR_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_vultr import FakeVultr
from vultr_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeVultr, pool: str, node: int, instance_id: str, region: str = "ewr") -> str:
    api.instances[instance_id] = {
        "id": instance_id,
        "label": f"skyward-{pool}-{node}",
        "tags": ["skyward"],
        "status": "active",
        "power_status": "running",
        "plan": "vcg-a100-12c-120g-80vram",
        "region": region,
        "date_created": "2026-11-25T10:00:00+00:00",
        "firewall_group_id": f"fw-{pool}",
    }
    api.ssh_keys[f"key-{pool}"] = {
        "id": f"key-{pool}",
        "name": f"skyward-{pool}",
        "ssh_key": "ssh-ed25519 AAAA",
    }
    api.firewalls[f"fw-{pool}"] = {"id": f"fw-{pool}", "description": f"skyward-{pool}", "instance_count": 1}
    return instance_id


@pytest.fixture
def sky(tmp_path: Path, vultr_api: FakeVultr) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(VULTR_API_KEY=API_KEY, VULTR_API_URL=vultr_api.url)
    # labelled like Skyward's, but without its tag: someone else's
    theirs = {"id": "vm-theirs", "label": "skyward-notes-0", "tags": [], "status": "active"}
    with beside_theirs(vultr_api.instances, theirs, "instance"):
        yield runner
    vultr_api.firewalls.clear()
    vultr_api.ssh_keys.clear()


def test_ls_lists_the_instances_skyward_tagged_and_labelled_and_no_other(
    sky: Sky, vultr_api: FakeVultr
) -> None:
    ours = [leftover(vultr_api, "crashed1", n, f"vm-{n}") for n in range(3)]  # more than a page
    listed = sky.json("ls", "--provider", "vultr")["machines"]
    assert sorted(m["id"] for m in listed) == ours
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"]) for m in listed}
    assert seen == {("Vultr", "crashed1", "vcg-a100-12c-120g-80vram", "ewr")}
    for instance in ours:
        vultr_api.instances.pop(instance)


def test_down_pool_deletes_that_pools_instances_key_and_firewall_group_only(
    sky: Sky, vultr_api: FakeVultr
) -> None:
    leftover(vultr_api, "first1", 0, "vm-a")
    leftover(vultr_api, "second2", 0, "vm-c", region="ord")
    done = sky("down", "first1", "--yes", "--provider", "vultr")
    assert done.returncode == 0, done.stderr
    assert vultr_api.deleted == ["vm-a"]
    assert sorted(vultr_api.instances) == ["vm-c", "vm-theirs"]
    assert sorted(vultr_api.firewalls) == ["fw-second2"] and sorted(vultr_api.ssh_keys) == ["key-second2"]
    vultr_api.instances.pop("vm-c")


def test_providers_check_verifies_the_key_with_one_listing(sky: Sky, vultr_api: FakeVultr) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "vultr")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", VULTR_API_KEY="NOT-THE-KEY")
    assert refused.returncode == 1 and "vultr" in refused.stderr.lower()
