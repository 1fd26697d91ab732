"""A pool on Compute Engine, end to end against the fake API: VMs created, used over SSH, deleted.

Every VM here is a real sshd the fake started with the host key from the VM's startup script and
the login key it authorises, so these tests cross the same boundary a real VM does: the
credentials (a service account key found through Application Default Credentials), the firewall
rule, the insert and its operation, the startup script, the pinned host key, the bootstrap and
the workers, and the deletion confirmed before the pool reports its end.
"""

from __future__ import annotations

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_gcp import FakeGCP
from gcp_support import gcp, gcp_pool

import skyward as sky
from skyward.errors import CapacityError, ProvisionError


def test_a_two_node_spot_pool_runs_tasks_on_its_vms_and_deletes_them_on_exit(gcp_api: FakeGCP) -> None:
    with gcp_pool(gcp_api, nodes=2, accelerator="L4", allocation="spot") as pool:
        assert len(gcp_api.instances) == 2
        assert_every_node_answers(pool, 2, "gcp")
        created = set(gcp_api.instances)
    for body in gcp_api.inserts:
        assert body["scheduling"]["provisioningModel"] == "SPOT"
        assert body["scheduling"]["instanceTerminationAction"] == "DELETE"
        assert body["machineType"] == "zones/us-central1-a/machineTypes/g2-standard-4"  # the cheapest L4
    assert sorted(gcp_api.deleted) == sorted(created)


def test_an_on_demand_pool_creates_labelled_vms_named_for_the_pool(gcp_api: FakeGCP) -> None:
    with gcp_pool(gcp_api, accelerator="T4", allocation="on-demand") as pool:
        assert square(3) >> pool == 9
    (body,) = gcp_api.inserts
    assert "provisioningModel" not in body["scheduling"]
    assert body["scheduling"]["onHostMaintenance"] == "TERMINATE"
    assert body["name"] == f"skyward-{pool.name}-0"
    assert body["labels"] == {"skyward-pool": pool.name, "skyward-node": "0"}
    assert body["machineType"].endswith("/n1-standard-4")
    (gpu,) = body["guestAccelerators"]
    assert gpu["acceleratorType"] == "zones/us-central1-a/acceleratorTypes/nvidia-tesla-t4"
    assert int(gpu["acceleratorCount"]) == 1


def test_the_ssh_rule_admits_the_clients_address_to_the_pools_vms_only(gcp_api: FakeGCP) -> None:
    with gcp_pool(gcp_api, accelerator="T4") as pool:
        assert square(2) >> pool == 4
        (rule,) = gcp_api.firewalls.values()
        (body,) = gcp_api.inserts
    assert rule["sourceRanges"] == ["127.0.0.1/32"]
    assert rule["allowed"] == [{"IPProtocol": "tcp", "ports": [str(gcp_api.ssh_port)]}]
    assert rule["targetTags"] == body["tags"]["items"] == [f"skyward-{pool.name}"]
    assert gcp_api.firewalls == {}, "the rule is deleted with the pool"


def test_a_zone_without_capacity_falls_over_to_the_next_offer(gcp_api: FakeGCP) -> None:
    gcp_api.no_capacity = {"us-central1-a"}
    with gcp_pool(gcp_api, provider=gcp(gcp_api, region="us-central1"), accelerator="T4") as pool:
        assert square(4) >> pool == 16
    refused, taken = gcp_api.inserts[0], gcp_api.inserts[-1]
    assert refused["machineType"].startswith("zones/us-central1-a/")
    assert taken["machineType"].startswith("zones/us-central1-b/"), "ZONE_RESOURCE_POOL_EXHAUSTED: next zone"


def test_no_spot_capacity_falls_over_to_on_demand(gcp_api: FakeGCP) -> None:
    gcp_api.no_capacity = {"spot"}
    with gcp_pool(gcp_api, accelerator="L4", allocation="spot-if-available") as pool:
        assert square(5) >> pool == 25
    assert gcp_api.inserts[0]["scheduling"].get("provisioningModel") == "SPOT"
    assert "provisioningModel" not in gcp_api.inserts[-1]["scheduling"]


def test_spot_without_capacity_fails_with_a_capacity_error_within_the_provision_timeout(
    gcp_api: FakeGCP,
) -> None:
    gcp_api.no_capacity = {"spot"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    compute = gcp_pool(gcp_api, accelerator="L4", allocation="spot", options=options)
    with pytest.raises(CapacityError, match="GCP has no capacity"), compute:
        pass
    assert len(gcp_api.inserts) >= 2, "capacity errors are retried"


def test_a_failed_delete_call_is_retried_and_the_deletion_confirmed(gcp_api: FakeGCP) -> None:
    gcp_api.delete_errors = 1
    with gcp_pool(gcp_api, accelerator="T4") as pool:
        assert square(5) >> pool == 25
        (created,) = gcp_api.instances
    assert gcp_api.deleted == [created] and gcp_api.delete_errors == 0


def test_missing_credentials_fail_at_pool_start_naming_where_they_are_looked_for(
    gcp_api: FakeGCP, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    config = gcp(gcp_api)  # builds without credentials: they are looked for when a pool starts
    says = (
        r"GOOGLE_APPLICATION_CREDENTIALS.*`gcloud auth application-default login`.*application_default_cred"
    )
    with pytest.raises(sky.ConfigurationError, match=says), gcp_pool(gcp_api, provider=config):
        pass
    assert gcp_api.inserts == [] and gcp_api.firewall_log == []


def test_refused_credentials_fail_naming_the_fix_before_anything_is_created(
    gcp_api: FakeGCP, monkeypatch: pytest.MonkeyPatch
) -> None:
    gcp_api.account_email = "someone-else@example.iam.gserviceaccount.com"
    with (
        pytest.raises(ProvisionError, match="refused the credentials.*GOOGLE_APPLICATION_CREDENTIALS"),
        gcp_pool(gcp_api, accelerator="T4"),
    ):
        pass
    assert gcp_api.inserts == []


def test_an_unknown_accelerator_fails_naming_the_cards_gcp_has(gcp_api: FakeGCP) -> None:
    with (
        pytest.raises(ProvisionError, match=r"no machine with 1x B200.*TPUs are not supported"),
        gcp_pool(gcp_api, accelerator="B200"),
    ):
        pass
    assert gcp_api.inserts == []


def test_a_vm_answering_with_another_host_key_is_never_handed_over(gcp_api: FakeGCP) -> None:
    import asyncssh

    from skyward_gcp import provider

    key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    gcp_api.impostor_key = key
    provider.HOST_KEY_GRACE, grace = 0.0, provider.HOST_KEY_GRACE
    try:
        with (
            pytest.raises(sky.HostKeyError),
            gcp_pool(gcp_api, accelerator="T4", options=sky.Options(ssh_timeout=5)),
        ):
            pass
    finally:
        provider.HOST_KEY_GRACE = grace
    assert len(gcp_api.deleted) == 1
