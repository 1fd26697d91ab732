"""`sky ls`, `sky down`, `sky offers` and `sky providers --check` against the fake JarvisLabs API:
instances found by their Skyward name, and no other.

The instances are put in the fake's account as a crashed client leaves them (named
`skyward-<pool>-<node>`, one paused, with the startup script it uploaded), next to an instance
of someone else's; `sky` runs as a subprocess pointed at the fake with `$JL_API_URL`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_jarvis import FakeJarvis
from jarvis_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeJarvis, pool: str, node: int, machine_id: str, status: str = "Running") -> str:
    api.instances[machine_id] = {
        "machine_id": int(machine_id),
        "name": f"skyward-{pool}-{node}",
        "status": status,
        "ssh_str": "ssh -p 2222 root@192.0.2.1",
        "gpu_type": "A100-80GB",
        "num_gpus": 1,
        "region": "india-noida-01",
        "template": "pytorch",
        "cost": 1.29,
    }
    return machine_id


@pytest.fixture
def sky(tmp_path: Path, jarvis_api: FakeJarvis) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(JL_API_KEY=API_KEY, JL_API_URL=jarvis_api.url)
    # named like Skyward's, but no `skyward-<pool>-<node>`
    theirs = {"id": "9", "machine_id": 9, "name": "skyward-notes", "status": "Running", "template": "pytorch"}
    with beside_theirs(jarvis_api.instances, theirs, "instance"):
        yield runner


def test_ls_lists_the_instances_skyward_named_running_or_paused_and_no_other(
    sky: Sky, jarvis_api: FakeJarvis
) -> None:
    ours = [leftover(jarvis_api, "crashed1", 0, "11"), leftover(jarvis_api, "crashed1", 1, "12", "Paused")]
    listed = sky.json("ls", "--provider", "jarvislabs")["machines"]
    assert sorted(m["id"] for m in listed) == ours
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"], m["hourly_price"]) for m in listed}
    assert seen == {("JarvisLabs", "crashed1", "1x A100-80GB", "india-noida-01", 1.29)}
    jarvis_api.instances.pop("11"), jarvis_api.instances.pop("12")


def test_down_pool_destroys_that_pools_instances_and_startup_scripts_only(
    sky: Sky, jarvis_api: FakeJarvis
) -> None:
    leftover(jarvis_api, "first1", 0, "11", "Paused")
    leftover(jarvis_api, "second2", 0, "13")
    jarvis_api.scripts["21"] = {"name": "skyward-first1-0", "text": "JL_API_KEY=..."}
    jarvis_api.scripts["22"] = {"name": "my-setup", "text": "pip install"}
    done = sky("down", "first1", "--yes", "--provider", "jarvislabs")
    assert done.returncode == 0, done.stderr
    assert jarvis_api.destroyed == ["11"]
    assert sorted(jarvis_api.instances) == ["13", "9"]
    assert list(jarvis_api.scripts) == ["22"], "the pool's script (it holds the key) goes, no other"
    jarvis_api.instances.pop("13"), jarvis_api.scripts.clear()


def test_providers_check_verifies_the_key_and_offers_list_gpu_types_with_prices(
    sky: Sky, jarvis_api: FakeJarvis
) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "jarvislabs")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", JL_API_KEY="jl_WRONG")
    assert refused.returncode == 1 and "jarvislabs" in refused.stderr.lower()
    listing = sky.json("offers", "--provider", "jarvislabs", "--accelerator", "A100")["offers"]
    two = next(o for o in listing if o["instance_type"] == "2x A100-80GB" and o["region"] == "india-noida-01")
    assert (two["accelerator_count"], two["accelerator_memory_gb"]) == (2, 80.0)
    assert (two["on_demand_price"], two["spot_price"]) == (pytest.approx(2.58), pytest.approx(1.38))
