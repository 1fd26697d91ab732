"""A pool on Vultr, end to end against the fake API: instances created, used over SSH, deleted.

Every instance here is a real sshd the fake started with the host key from the instance's user
data and the login key the pool registered, so these tests cross the same boundary a real
instance does: the plan listing, the firewall group, the create request, the user data, the
pinned host key, the bootstrap and the workers, and the deletion confirmed before the pool ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_vultr import FakeVultr
from vultr_support import API_KEY, vultr, vultr_pool

import skyward as sky
from skyward.errors import CapacityError, NoOffersError, ProvisionError


def test_a_two_node_pool_runs_tasks_on_its_instances_and_deletes_everything_on_exit(
    vultr_api: FakeVultr,
) -> None:
    with vultr_pool(vultr_api, nodes=2, accelerator="A100") as pool:
        assert len(vultr_api.instances) == 2
        assert_every_node_answers(pool, 2, "vultr")
        created = set(vultr_api.instances)
    assert {body["plan"] for body in vultr_api.creates} == {"vcg-a100-12c-120g-80vram"}  # whole, cheapest
    assert sorted(vultr_api.deleted) == sorted(created)


def test_instances_are_tagged_labelled_for_the_pool_and_behind_a_firewall_open_to_the_client_only(
    vultr_api: FakeVultr,
) -> None:
    with vultr_pool(vultr_api, accelerator="L40S", region="ord") as pool:
        assert square(3) >> pool == 9
        (row,) = vultr_api.instances.values()
        rules = vultr_api.rules[row["firewall_group_id"]]
    (body,) = vultr_api.creates
    assert body["label"] == body["hostname"] == f"skyward-{pool.name}-0".lower()
    assert body["tags"] == ["skyward"] and body["region"] == "ord" and body["os_id"] == 2284
    assert [(r["ip_type"], r["protocol"], r["subnet"], r["subnet_size"], r["port"]) for r in rules] == [
        ("v4", "tcp", "127.0.0.1", 32, str(vultr_api.ssh_port))
    ]


def test_a_capacity_refusal_falls_over_to_the_next_offer(vultr_api: FakeVultr) -> None:
    vultr_api.no_capacity = {"ewr"}
    with vultr_pool(vultr_api, accelerator="A100") as pool:
        assert square(4) >> pool == 16
    refused, taken = vultr_api.creates[0], vultr_api.creates[-1]
    assert (refused["region"], taken["region"]) == ("ewr", "ord"), "ewr sold out: the next region is taken"


def test_no_capacity_anywhere_fails_with_a_capacity_error_within_the_provision_timeout(
    vultr_api: FakeVultr,
) -> None:
    vultr_api.no_capacity = {"vcg-h100-16c-240g-80vram"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    with (
        pytest.raises(CapacityError, match="no capacity"),
        vultr_pool(vultr_api, accelerator="H100", options=options),
    ):
        pass
    assert len(vultr_api.creates) >= 2, "capacity errors are retried"


def test_spot_is_refused_naming_the_fix_before_anything_is_created(vultr_api: FakeVultr) -> None:
    with (
        pytest.raises(NoOffersError, match='sells no spot.*allocation="on-demand"'),
        vultr_pool(vultr_api, accelerator="A100", allocation="spot"),
    ):
        pass
    assert vultr_api.creates == [] and vultr_api.keys_seen, "the plans were read, nothing created"


def test_a_failed_delete_call_is_retried_and_the_deletion_confirmed(vultr_api: FakeVultr) -> None:
    vultr_api.delete_errors = 1
    with vultr_pool(vultr_api, accelerator="A100") as pool:
        assert square(5) >> pool == 25
        (created,) = vultr_api.instances
    assert vultr_api.deleted == [created] and vultr_api.delete_errors == 0


def test_a_refused_key_fails_naming_the_variable_and_leaves_nothing(vultr_api: FakeVultr) -> None:
    provider = vultr(vultr_api, api_key="NOT-THE-ACCOUNTS-KEY")
    with (
        pytest.raises(ProvisionError, match="VULTR_API_KEY") as caught,
        vultr_pool(vultr_api, provider=provider, accelerator="A100"),
    ):
        pass
    assert "NOT-THE-ACCOUNTS-KEY" not in str(caught.value)
    assert vultr_api.creates == []


def test_a_start_that_fails_after_making_the_key_and_firewall_group_deletes_them(
    vultr_api: FakeVultr,
) -> None:
    vultr_api.refuse_rules = True
    with (
        pytest.raises(ProvisionError, match="maximum number of rules"),
        vultr_pool(vultr_api, accelerator="A100"),
    ):
        pass
    assert vultr_api.creates == [] and vultr_api.ssh_keys == {} and vultr_api.firewalls == {}


def test_a_client_that_cannot_learn_its_address_fails_naming_ssh_cidr_and_opens_nothing(
    vultr_api: FakeVultr,
) -> None:
    provider = vultr(vultr_api, ip_lookup_url=vultr_api.url + "/no-such-echo")
    with (
        pytest.raises(ProvisionError, match=r"Vultr\(ssh_cidr=...\)"),
        vultr_pool(vultr_api, provider=provider, accelerator="A100"),
    ):
        pass
    assert vultr_api.firewalls == {} and vultr_api.ssh_keys == {}


def test_a_missing_key_fails_naming_the_variable_before_any_request(vultr_api: FakeVultr) -> None:
    compute = sky.Compute(provider=sky.Vultr(api_url=vultr_api.url), console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match="VULTR_API_KEY"), compute:
        pass
    assert vultr_api.keys_seen == [], "no request was even sent"


def test_an_unknown_accelerator_fails_naming_close_cards(vultr_api: FakeVultr) -> None:
    with (
        pytest.raises(NoOffersError, match=r"no plan with 1x B200 \(\d+ GB\).*close GPUs"),
        vultr_pool(vultr_api, accelerator="B200"),
    ):
        pass
    assert vultr_api.creates == []


def test_the_key_appears_in_no_log_line_or_event(vultr_api: FakeVultr, tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    with vultr_pool(vultr_api, accelerator="A40", logging=logging_config, on_event=events.append) as pool:
        assert square(2) >> pool == 4
    text = log_file.read_text()
    assert "skyward.vultr_instance_created" in text
    assert API_KEY not in text
    assert events and not any(API_KEY in repr(event) for event in events)


def test_an_instance_answering_with_another_host_key_is_never_handed_over(vultr_api: FakeVultr) -> None:
    import asyncssh

    from skyward_vultr import provider

    vultr_api.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    provider.GRACE, grace = 0.0, provider.GRACE
    try:
        with pytest.raises(sky.HostKeyError), vultr_pool(vultr_api, options=sky.Options(ssh_timeout=5)):
            pass
    finally:
        provider.GRACE = grace
    assert len(vultr_api.deleted) == 1
