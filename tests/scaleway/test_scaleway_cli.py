"""`sky ls`, `sky down`, `sky offers` and `sky providers --check` against the fake Instance API.

The servers are put in the fake's project as a crashed client leaves them (tag `skyward`, name
`skyward-<pool>-<node>`, the pool's security group beside them), next to a server of someone
else's named like Skyward's but untagged; `sky` runs as a subprocess pointed at the fake with
`$SCW_API_URL` and the credentials in the environment.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from fake_scaleway import FakeScaleway
from scaleway_support import CREDENTIALS, PROJECT

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky, beside_theirs  # noqa: E402


def leftover(api: FakeScaleway, pool: str, node: int, server_id: str, zone: str = "fr-par-2") -> str:
    group = f"sg-{pool}-{zone}"
    api.groups[group] = {"id": group, "name": f"skyward-{pool}", "zone": zone, "project": PROJECT}
    api.rules[group] = []
    api.volumes[f"vol-{server_id}"] = {"id": f"vol-{server_id}", "zone": zone, "server": server_id}
    boot = {"id": f"vol-{server_id}", "volume_type": "sbs_volume", "boot": True, "zone": zone}
    api.servers[server_id] = {
        "id": server_id,
        "name": f"skyward-{pool}-{node}",
        "tags": ["skyward"],
        "project": PROJECT,
        "state": "running",
        "commercial_type": "H100-1-80G",
        "zone": zone,
        "creation_date": "2026-11-25T10:00:00+00:00",
        "security_group": {"id": group, "name": f"skyward-{pool}"},
        "volumes": {"0": boot},
    }
    return server_id


@pytest.fixture
def sky(tmp_path: Path, scaleway_api: FakeScaleway) -> Any:
    runner = Sky(tmp_path)
    runner.env.update(CREDENTIALS, SCW_API_URL=scaleway_api.url, SCW_CONFIG_PATH=str(tmp_path / "none.yaml"))
    # named like Skyward's, but without its tag: someone else's
    theirs = {
        "id": "srv-theirs",
        "name": "skyward-notes-0",
        "tags": [],
        "project": PROJECT,
        "zone": "fr-par-2",
    }
    theirs |= {"state": "running", "security_group": {"id": "sg-theirs"}}
    with beside_theirs(scaleway_api.servers, theirs, "server"):
        yield runner
    scaleway_api.groups.clear()


def test_ls_lists_the_servers_skyward_tagged_and_named_in_every_gpu_zone_and_no_other(
    sky: Sky, scaleway_api: FakeScaleway
) -> None:
    ours = [leftover(scaleway_api, "crashed1", n, f"srv-{n}") for n in range(3)]  # more than a page
    ours.append(leftover(scaleway_api, "crashed1", 3, "srv-3", zone="pl-waw-2"))
    listed = sky.json("ls", "--provider", "scaleway")["machines"]
    assert sorted(m["id"] for m in listed) == sorted(
        f"{s['zone']}/{s['id']}" for s in map(scaleway_api.servers.get, ours)
    )
    seen = {(m["provider"], m["pool"], m["instance_type"]) for m in listed}
    assert seen == {("Scaleway", "crashed1", "H100-1-80G")}
    for server in ours:
        scaleway_api.servers.pop(server)
        scaleway_api.volumes.pop(f"vol-{server}")


def test_down_pool_terminates_that_pools_servers_and_deletes_their_volumes_and_security_group_only(
    sky: Sky, scaleway_api: FakeScaleway
) -> None:
    leftover(scaleway_api, "first1", 0, "srv-a")
    leftover(scaleway_api, "second2", 0, "srv-c", zone="nl-ams-1")
    done = sky("down", "first1", "--yes", "--provider", "scaleway")
    assert done.returncode == 0, done.stderr
    assert scaleway_api.terminated == ["srv-a"]
    assert sorted(scaleway_api.servers) == ["srv-c", "srv-theirs"]
    assert sorted(scaleway_api.groups) == ["sg-second2-nl-ams-1"]
    assert sorted(scaleway_api.volumes) == ["vol-srv-c"], "the terminated server's boot volume deleted"
    scaleway_api.servers.pop("srv-c")
    scaleway_api.volumes.pop("vol-srv-c")


def test_a_boot_volume_its_server_left_when_its_guardian_terminated_it_is_listed_and_deleted_by_down(
    sky: Sky, scaleway_api: FakeScaleway
) -> None:
    # What a server's own termination leaves (test_scaleway_guardian): no server, its boot volume
    # detached, named for the server and tagged at creation; beside it, a detached volume of
    # someone else's with the same name but no tag, and an attached one of a live server.
    scaleway_api.volumes["vol-left"] = {
        "id": "vol-left", "zone": "fr-par-2", "server": None, "name": "skyward-gone1-0",
        "tags": ["skyward"], "project": PROJECT, "created_at": "2026-11-25T10:00:00+00:00",
        "last_detached_at": "2026-11-25T12:00:00+00:00",
    }  # fmt: skip
    scaleway_api.volumes["vol-theirs"] = {"id": "vol-theirs", "zone": "fr-par-2", "server": None,
                                          "name": "skyward-gone1-1", "tags": [], "project": PROJECT}
    leftover(scaleway_api, "live1", 0, "srv-live")
    scaleway_api.volumes["vol-srv-live"] |= {"name": "skyward-live1-0", "tags": ["skyward"]}
    listed = {m["id"]: m for m in sky.json("ls", "--provider", "scaleway")["machines"]}
    assert sorted(listed) == ["fr-par-2/srv-live", "fr-par-2/volume/vol-left"]
    volume = listed["fr-par-2/volume/vol-left"]
    assert (volume["pool"], volume["node"], volume["state"], volume["expired"]) == ("gone1", 0, "detached", True)
    done = sky("down", "--expired", "--yes", "--provider", "scaleway")
    assert done.returncode == 0, done.stderr
    assert sorted(scaleway_api.volumes) == ["vol-srv-live", "vol-theirs"], "only the leftover volume deleted"
    assert scaleway_api.terminated == [], "a live server is not expired"
    for name in ("srv-live",):
        scaleway_api.servers.pop(name)
    scaleway_api.volumes.clear()


def test_offers_and_providers_check_read_the_project_with_the_environments_credentials(
    sky: Sky, scaleway_api: FakeScaleway
) -> None:
    listing = sky.json("offers", "--provider", "scaleway", "--accelerator", "L4")
    offers = {(o["instance_type"], o["region"]): o for o in listing["offers"]}
    assert set(offers) == {
        ("L4-1-24G", "fr-par-2"), ("L4-2-24G", "fr-par-2"),
        ("L4-1-24G", "nl-ams-1"), ("L4-1-24G", "pl-waw-2"),
    }  # fmt: skip
    one = offers[("L4-1-24G", "fr-par-2")]
    assert (one["provider"], one["accelerator"], one["accelerator_count"], one["accelerator_memory_gb"]) == (
        "scaleway", "L4", 1, 24.0,
    )  # fmt: skip
    assert (one["vcpus"], one["memory_gb"], one["on_demand_price"], one["spot_price"]) == (
        8,
        48.0,
        0.75,
        None,
    )
    assert offers[("L4-2-24G", "fr-par-2")]["accelerator_count"] == 2
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "scaleway")
    assert row["credentials"]["verified"] is True
    refused = sky("providers", "--check", SCW_SECRET_KEY="00000000-1111-4222-8333-444444444444")
    assert refused.returncode == 1 and "scaleway" in refused.stderr.lower()
