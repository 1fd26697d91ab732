"""A pool on Verda, end to end against the fake API: VMs deployed, used over SSH, deleted.

Every VM here is a real sshd the fake started with the host key from the VM's startup script and
the login key the pool registered, so these tests cross the same boundary a real VM does: the
OAuth login, the deploy request, the startup script, the pinned host key, the bootstrap and the
workers, and the deletion confirmed before the pool reports its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_verda import FakeVerda
from verda_support import CLIENT_SECRET, verda, verda_pool

import skyward as sky
from skyward.errors import CapacityError, ProvisionError


def test_a_two_node_spot_pool_runs_tasks_on_its_vms_and_deletes_them_on_exit(verda_api: FakeVerda) -> None:
    with verda_pool(verda_api, nodes=2, accelerator="A100", allocation="spot") as pool:
        assert len(verda_api.instances) == 2
        assert_every_node_answers(pool, 2, "verda")
        created = set(verda_api.instances)
    assert [body["is_spot"] for body in verda_api.creates] == [True, True]
    assert {body["instance_type"] for body in verda_api.creates} == {"1A100.22V"}  # 80 GB, the cheapest
    assert sorted(verda_api.deleted) == sorted(created)


def test_an_on_demand_pool_deploys_on_demand_vms_named_for_the_pool(verda_api: FakeVerda) -> None:
    with verda_pool(verda_api, accelerator="H100", allocation="on-demand") as pool:
        assert square(3) >> pool == 9
        (row,) = verda_api.instances.values()
    (body,) = verda_api.creates
    assert body["is_spot"] is False and body["instance_type"] == "1H100.80S.30V"
    assert body["hostname"] == f"skyward-{pool.name}-0".lower()
    assert row["hostname"] == body["hostname"]


def test_a_capacity_refusal_falls_over_to_the_next_offer(verda_api: FakeVerda) -> None:
    verda_api.no_capacity = {"spot"}
    with verda_pool(verda_api, accelerator="A100", allocation="spot-if-available") as pool:
        assert square(4) >> pool == 16
    refused, taken = verda_api.creates[0], verda_api.creates[-1]
    assert refused["is_spot"] is True
    assert taken["is_spot"] is False, "no spot capacity: the on-demand offer is taken instead"


def test_spot_without_capacity_fails_with_a_capacity_error_within_the_provision_timeout(
    verda_api: FakeVerda,
) -> None:
    verda_api.no_capacity = {"spot"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    compute = verda_pool(verda_api, accelerator="A100", allocation="spot", options=options)
    with pytest.raises(CapacityError, match="no capacity"), compute:
        pass
    assert len(verda_api.creates) >= 2, "capacity errors are retried"
    assert all(body["is_spot"] for body in verda_api.creates)


def test_a_failed_delete_call_is_retried_and_the_deletion_confirmed(verda_api: FakeVerda) -> None:
    verda_api.delete_errors = 1
    with verda_pool(verda_api, accelerator="A100") as pool:
        assert square(5) >> pool == 25
        (created,) = verda_api.instances
    assert verda_api.deleted == [created]
    assert verda_api.delete_errors == 0


def test_refused_credentials_fail_naming_the_variables_before_anything_is_deployed(
    verda_api: FakeVerda,
) -> None:
    provider = verda(verda_api, client_secret="vsec_NOT_THE_ACCOUNTS")
    with pytest.raises(ProvisionError, match="VERDA_CLIENT_SECRET") as caught, verda_pool(
        verda_api, provider=provider, accelerator="A100"
    ):
        pass
    assert "vsec_NOT_THE_ACCOUNTS" not in str(caught.value)
    assert verda_api.creates == []


def test_missing_credentials_fail_naming_both_variables_before_any_request(verda_api: FakeVerda) -> None:
    compute = sky.Compute(provider=sky.Verda(api_url=verda_api.url), console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match="VERDA_CLIENT_ID and VERDA_CLIENT_SECRET"), compute:
        pass
    assert verda_api.tokens == set(), "no login was even tried"


def test_an_unknown_accelerator_fails_naming_close_types(verda_api: FakeVerda) -> None:
    says = r"no instance type with 1x B200 \(\d+ GB\).*close types"
    with pytest.raises(ProvisionError, match=says), verda_pool(verda_api, accelerator="B200"):
        pass
    assert verda_api.creates == []


def test_the_secret_appears_in_no_log_line_or_event(verda_api: FakeVerda, tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    with verda_pool(verda_api, logging=logging_config, on_event=events.append) as pool:
        assert square(2) >> pool == 4
    text = log_file.read_text()
    assert "skyward.verda_instance_created" in text
    assert CLIENT_SECRET not in text
    assert events and not any(CLIENT_SECRET in repr(event) for event in events)


def test_a_vm_answering_with_another_host_key_is_never_handed_over(verda_api: FakeVerda) -> None:
    import asyncssh

    from skyward_verda import provider

    verda_api.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    provider.GRACE, grace = 0.0, provider.GRACE
    try:
        with pytest.raises(sky.HostKeyError), verda_pool(verda_api, options=sky.Options(ssh_timeout=5)):
            pass
    finally:
        provider.GRACE = grace
    assert len(verda_api.deleted) == 1


def test_a_vm_that_never_answers_ssh_fails_the_start_and_is_deleted(verda_api: FakeVerda) -> None:
    verda_api.sshd_down = True
    options = sky.Options(provision_timeout=3, provision_retry_delay=0.2)
    compute = verda_pool(verda_api, options=options)
    with pytest.raises(ProvisionError, match="no SSH address after 3 s"), compute:
        pass
    assert len(verda_api.deleted) == 1
