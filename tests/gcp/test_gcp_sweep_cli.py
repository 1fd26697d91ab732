"""`sky ls` and `sky down` against the fake Compute Engine: VMs found by their Skyward name and
labels together, and no other.

The VMs are put in the fake project as a crashed client leaves them (named `skyward-<pool>-<node>`
and labelled with that pool and node, the pool's firewall rule beside them), next to two VMs of
someone else's: one named like Skyward's without the labels, one labelled without the name.
`sky` runs as a subprocess pointed at the fake with `$GCP_API_ENDPOINT`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_gcp import FakeGCP

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402

ZONE = "us-central1-a"


def leftover(api: FakeGCP, pool: str, node: int) -> str:
    api.firewalls[f"skyward-{pool}-ssh"] = {"name": f"skyward-{pool}-ssh", "sourceRanges": ["127.0.0.1/32"]}
    labels = {"skyward-pool": pool, "skyward-node": str(node)}
    return api.place(ZONE, f"skyward-{pool}-{node}", labels, spot=True)


@pytest.fixture
def sky(tmp_path: Path, gcp_api: FakeGCP) -> Iterator[Sky]:
    runner = Sky(tmp_path)
    runner.env.update(
        GCP_API_ENDPOINT=gcp_api.url,
        NO_GCE_CHECK="True",
        CLOUDSDK_CONFIG=str(tmp_path / "gcloud"),
        GOOGLE_APPLICATION_CREDENTIALS=str(tmp_path / "service-account.json"),
    )
    theirs = [
        gcp_api.place(ZONE, "skyward-notes-0", {}),
        gcp_api.place(ZONE, "web-1", {"skyward-pool": "notes", "skyward-node": "1"}),
    ]
    rows = {key: gcp_api.instances[key] for key in theirs}
    yield runner
    assert {key: gcp_api.instances.pop(key, None) for key in theirs} == rows, "someone else's VM was touched"


def test_ls_lists_the_vms_skyward_named_and_labelled_and_no_other(sky: Sky, gcp_api: FakeGCP) -> None:
    ours = [leftover(gcp_api, "crashed-1a2b3c4d", 0), leftover(gcp_api, "crashed-1a2b3c4d", 1)]
    listed = sky.json("ls", "--provider", "gcp")["machines"]
    assert sorted(gcp_api.key(m["id"]) for m in listed) == ours
    seen = {(m["provider"], m["pool"], m["instance_type"], m["region"]) for m in listed}
    assert seen == {("GCP", "crashed-1a2b3c4d", "g2-standard-4 (spot)", ZONE)}
    for key in ours:
        gcp_api.instances.pop(key)
    gcp_api.firewalls.clear()


def test_down_pool_deletes_that_pools_vms_and_firewall_rule_only(sky: Sky, gcp_api: FakeGCP) -> None:
    first = leftover(gcp_api, "first-1a2b3c4d", 0)
    second = leftover(gcp_api, "second-1a2b3c4d", 0)
    done = sky("down", "first-1a2b3c4d", "--yes", "--provider", "gcp")
    assert done.returncode == 0, done.stderr
    assert gcp_api.deleted == [first]
    assert second in gcp_api.instances and sorted(gcp_api.firewalls) == ["skyward-second-1a2b3c4d-ssh"]
    gcp_api.instances.pop(second)
    gcp_api.firewalls.clear()


def test_providers_check_verifies_the_credentials_with_one_listing(sky: Sky, gcp_api: FakeGCP) -> None:
    row = next(r for r in sky.json("providers", "--check")["providers"] if r["type"] == "gcp")
    assert row["credentials"]["verified"] is True, row
    gcp_api.account_email = "someone-else@example.iam.gserviceaccount.com"
    refused = sky("providers", "--check")
    assert refused.returncode == 1 and "credentials refused by: GCP" in refused.stderr
