"""`sky ls` and `sky down` against the fake Novita API: instances found by their Skyward name only.

The instances are put in the fake's account as a crashed client leaves them (named
`skyward-<pool>-<node>`), beside one of someone else's; `sky` runs as a subprocess pointed at the
fake with `$NOVITA_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_novita import FakeNovita
from novita_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeNovita, pool: str, node: int, instance_id: str) -> str:
    api.instances[instance_id] = {
        "id": instance_id, "name": f"skyward-{pool}-{node}", "status": "running", "gpuNum": "1",
        "productName": "RTX 4090 24GB", "clusterName": "us-east", "billingMode": "spot",
    }
    return instance_id


@pytest.fixture
def sky(tmp_path: Path, novita_api: FakeNovita) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(NOVITA_API_KEY=API_KEY, NOVITA_API_URL=novita_api.url)
    theirs = {"id": "theirs", "name": "skyward-notes", "status": "running"}
    with beside_theirs(novita_api.instances, theirs, "instance"):
        yield runner


def test_ls_lists_the_instances_skyward_named_and_no_other(sky: Sky, novita_api: FakeNovita) -> None:
    ours = [leftover(novita_api, "crashed1", 0, "i-a"), leftover(novita_api, "crashed1", 1, "i-b")]
    listed = sky.json("ls", "--provider", "novita")["machines"]
    assert sorted(m["id"] for m in listed) == ours
    assert {(m["provider"], m["pool"], m["instance_type"], m["region"]) for m in listed} == {
        ("Novita", "crashed1", "1x RTX 4090 24GB (spot)", "us-east")
    }
    novita_api.instances.pop("i-a"), novita_api.instances.pop("i-b")


def test_down_pool_deletes_that_pools_instances_only(sky: Sky, novita_api: FakeNovita) -> None:
    leftover(novita_api, "first1", 0, "i-a")
    leftover(novita_api, "second2", 0, "i-c")
    done = sky("down", "first1", "--yes", "--provider", "novita")
    assert done.returncode == 0, done.stderr
    assert novita_api.deleted == ["i-a"]
    assert sorted(novita_api.instances) == ["i-c", "theirs"]
    novita_api.instances.pop("i-c")


def test_providers_check_verifies_the_key_with_one_listing(sky: Sky, novita_api: FakeNovita) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "novita")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", NOVITA_API_KEY="sk_WRONG")
    assert refused.returncode == 1 and "novita" in refused.stderr.lower()
