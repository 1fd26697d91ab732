"""A pool on Hyperstack, end to end against the fake Infrahub API: VMs created, used over SSH, deleted.

Every VM here is a real sshd the fake started with the host key from the VM's cloud-init user data
and the pool's keypair, so these tests cross the same boundary a real VM does: the `api_key`
header, the environment and keypair, the create request, the user data, the pinned host key, the
bootstrap and the workers, and the deletion confirmed before the pool reports its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_infrahub import FakeInfrahub
from hyperstack_support import API_KEY, hyperstack, hyperstack_pool

import skyward as sky
from skyward.errors import CapacityError, NoOffersError, ProvisionError


def test_a_two_node_pool_runs_tasks_on_its_vms_and_deletes_them_and_its_keypair_on_exit(
    hyperstack_api: FakeInfrahub,
) -> None:
    with hyperstack_pool(hyperstack_api, nodes=2, accelerator="A100") as pool:
        assert len(hyperstack_api.vms) == 2
        assert_every_node_answers(pool, 2, "hyperstack")
        created = set(hyperstack_api.vms)
        (keypair,) = hyperstack_api.keypairs.values()
    assert {body["flavor_name"] for body in hyperstack_api.creates} == {"n3-A100x1"}  # the cheapest A100
    assert sorted(hyperstack_api.deleted_vms) == sorted(created)
    assert keypair["name"] == f"skyward-{pool.name}" and hyperstack_api.keypairs == {}


def test_vms_are_named_for_the_pool_in_the_regions_environment_with_ssh_open(
    hyperstack_api: FakeInfrahub,
) -> None:
    provider = hyperstack(hyperstack_api, region="canada-1", ssh_from="198.51.100.7/32")
    with hyperstack_pool(hyperstack_api, provider=provider, accelerator="H100") as pool:
        assert square(3) >> pool == 9
    (body,) = hyperstack_api.creates
    assert body["name"] == f"skyward-{pool.name}-0" and body["environment_name"] == "skyward-canada-1"
    assert body["flavor_name"] == "n3-H100x1" and body["assign_floating_ip"] is True
    (rule,) = body["security_rules"]
    assert (rule["remote_ip_prefix"], rule["port_range_min"]) == ("198.51.100.7/32", hyperstack_api.ssh_port)
    assert [e["name"] for e in hyperstack_api.environments.values()] == ["skyward-canada-1"]


def test_a_capacity_refusal_falls_over_to_the_next_offer(hyperstack_api: FakeInfrahub) -> None:
    hyperstack_api.no_capacity = {"CANADA-1"}
    with hyperstack_pool(hyperstack_api, accelerator="A100") as pool:
        assert square(4) >> pool == 16
        (vm,) = hyperstack_api.vms.values()
    tried = [(body["flavor_name"], body["environment_name"]) for body in hyperstack_api.creates]
    assert tried == [("n3-A100x1", "skyward-canada-1"), ("n3-A100x1", "skyward-norway-1")]
    assert vm["environment"]["region"] == "NORWAY-1", "refused in CANADA-1: the same flavor in NORWAY-1"


def test_a_flavor_out_of_stock_is_not_tried(hyperstack_api: FakeInfrahub) -> None:
    hyperstack_api.out_of_stock = {"n3-H100x1"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    with pytest.raises(CapacityError), hyperstack_pool(hyperstack_api, accelerator="H100", options=options):
        pass
    assert hyperstack_api.creates == []


def test_spot_is_refused_naming_the_allocation_that_works(hyperstack_api: FakeInfrahub) -> None:
    says = 'sells no spot machines: use allocation="on-demand"'
    with (
        pytest.raises(NoOffersError, match=says),
        hyperstack_pool(hyperstack_api, accelerator="A100", allocation="spot"),
    ):
        pass
    assert hyperstack_api.creates == []


def test_a_failed_delete_call_is_retried_and_the_deletion_confirmed(hyperstack_api: FakeInfrahub) -> None:
    hyperstack_api.vm_delete_errors = 1
    with hyperstack_pool(hyperstack_api, accelerator="L40") as pool:
        assert square(5) >> pool == 25
        (created,) = hyperstack_api.vms
    assert hyperstack_api.deleted_vms == [created] and hyperstack_api.vm_delete_errors == 0


def test_a_refused_api_key_fails_naming_the_variable_before_anything_is_created(
    hyperstack_api: FakeInfrahub,
) -> None:
    provider = hyperstack(hyperstack_api, api_key="hs-NOT-THE-ACCOUNTS-KEY")
    with (
        pytest.raises(ProvisionError, match="HYPERSTACK_API_KEY") as caught,
        hyperstack_pool(hyperstack_api, provider=provider, accelerator="A100"),
    ):
        pass
    assert "hs-NOT-THE-ACCOUNTS-KEY" not in str(caught.value)
    assert hyperstack_api.creates == []


def test_a_missing_api_key_fails_naming_the_variable_before_any_request(hyperstack_api: FakeInfrahub) -> None:
    compute = sky.Compute(provider=sky.Hyperstack(api_url=hyperstack_api.url), console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match="HYPERSTACK_API_KEY"), compute:
        pass
    assert hyperstack_api.calls == []


def test_an_unknown_accelerator_fails_naming_close_gpus(hyperstack_api: FakeInfrahub) -> None:
    with (
        pytest.raises(ProvisionError, match=r"no flavor with 1x B200.*close GPUs"),
        hyperstack_pool(hyperstack_api, accelerator="B200"),
    ):
        pass
    assert hyperstack_api.creates == []


def test_the_api_key_appears_in_no_log_line_or_event(hyperstack_api: FakeInfrahub, tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    compute = hyperstack_pool(
        hyperstack_api, accelerator="L40", logging=logging_config, on_event=events.append
    )
    with compute as pool:
        assert square(2) >> pool == 4
    text = log_file.read_text()
    assert "skyward.hyperstack_vm_created" in text
    assert API_KEY not in text
    assert events and not any(API_KEY in repr(event) for event in events)


def test_a_vm_answering_with_another_host_key_is_never_handed_over(hyperstack_api: FakeInfrahub) -> None:
    import asyncssh

    from skyward_hyperstack import provider

    hyperstack_api.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    provider.HOST_KEY_GRACE, grace = 0.0, provider.HOST_KEY_GRACE
    try:
        with (
            pytest.raises(sky.HostKeyError),
            hyperstack_pool(hyperstack_api, accelerator="L40", options=sky.Options(ssh_timeout=5)),
        ):
            pass
    finally:
        provider.HOST_KEY_GRACE = grace
    assert len(hyperstack_api.deleted_vms) == 1
