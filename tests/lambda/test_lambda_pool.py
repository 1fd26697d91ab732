"""A pool on Lambda Cloud, end to end against the fake API: VMs launched, used over SSH, terminated.

Every VM here is a real sshd the fake started with the host key from the VM's cloud-init user data
and the login key the pool registered, so these tests cross the same boundary a real VM does: the
key, the launch request, the user data, the pinned host key, the bootstrap and the workers, and the
termination confirmed before the pool reports its end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_lambda import FakeLambda
from lambda_support import API_KEY, GUARDIAN_KEY, lambda_cloud, lambda_pool

import skyward as sky
from skyward.errors import CapacityError, NoOffersError, ProvisionError
from skyward_lambda.api import LambdaAPI


def test_a_two_node_pool_runs_tasks_on_its_vms_and_terminates_them_on_exit(lambda_api: FakeLambda) -> None:
    lambda_api.booting_reads = 1  # each VM is read back booting, without an address, before it is active
    with lambda_pool(lambda_api, nodes=2) as pool:
        assert len(lambda_api.instances) == 2
        assert_every_node_answers(pool, 2, "lambda")
        launched = set(lambda_api.instances)
    names = sorted(body["name"] for body in lambda_api.launches)
    assert names == [f"skyward-{pool.id}-0", f"skyward-{pool.id}-1"]
    assert {b["instance_type_name"] for b in lambda_api.launches} == {"gpu_1x_h100_pcie"}  # the cheapest
    assert sorted(lambda_api.terminated) == sorted(launched)


def test_a_capacity_refusal_falls_over_to_the_next_offer(lambda_api: FakeLambda) -> None:
    lambda_api.no_capacity = {"gpu_1x_h100_pcie"}  # listed with capacity, refused at launch
    with lambda_pool(lambda_api) as pool:
        assert square(4) >> pool == 16
    refused, taken = lambda_api.launches[0], lambda_api.launches[-1]
    assert refused["instance_type_name"] == "gpu_1x_h100_pcie"
    assert taken["instance_type_name"] == "gpu_1x_h100_sxm5"


def test_the_region_limits_the_offers_a_pool_launches_from(lambda_api: FakeLambda) -> None:
    spec = sky.Spec(provider=lambda_cloud(lambda_api), accelerator="H100")
    assert lambda_cloud(lambda_api).hourly_price(spec) == pytest.approx(2.49)  # PCIe, in us-east-1
    only_sxm = lambda_cloud(lambda_api, region="europe-central-1")
    assert only_sxm.hourly_price(spec) == pytest.approx(3.29)


def test_no_capacity_anywhere_fails_with_a_capacity_error_within_the_provision_timeout(
    lambda_api: FakeLambda,
) -> None:
    lambda_api.no_capacity = {"us-east-1", "us-west-1", "europe-central-1"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    with pytest.raises(CapacityError, match="no capacity"), lambda_pool(lambda_api, options=options):
        pass
    assert len(lambda_api.launches) >= 6, "every offer is tried, and tried again"


def test_launches_limited_by_lambdas_rate_are_waited_out(lambda_api: FakeLambda) -> None:
    lambda_api.launch_interval = 1.5

    async def launch_two() -> list[str]:
        api = LambdaAPI(API_KEY, lambda_api.url)
        key = await api.add_ssh_key("skyward-rate-1a2b3c4d", "ssh-ed25519 AAAA rate")
        where = {"region_name": "us-east-1", "instance_type_name": "gpu_1x_a10"}
        keys = {"ssh_key_names": ["skyward-rate-1a2b3c4d"]}
        bodies = [{**where, **keys, "name": f"skyward-rate-1a2b3c4d-{n}"} for n in range(2)]
        ids = await asyncio.gather(*(api.launch(body) for body in bodies))
        for instance_id in ids:
            await api.terminate(instance_id)
        await api.delete_ssh_key(key)
        await api.close()
        return list(ids)

    assert len(set(asyncio.run(launch_two()))) == 2
    assert lambda_api.rate_limited >= 1, "the second launch came too soon and was answered 429"


def test_spot_is_refused_naming_on_demand_before_anything_is_launched(lambda_api: FakeLambda) -> None:
    with pytest.raises(NoOffersError, match='sells no spot.*allocation="on-demand"'), lambda_pool(
        lambda_api, allocation="spot"
    ):
        pass
    assert lambda_api.launches == []


def test_a_failed_terminate_call_is_retried_and_the_termination_confirmed(lambda_api: FakeLambda) -> None:
    lambda_api.terminate_errors = 1
    with lambda_pool(lambda_api) as pool:
        assert square(5) >> pool == 25
        (launched,) = lambda_api.instances
    assert lambda_api.terminated == [launched]
    assert lambda_api.terminate_errors == 0


def test_a_refused_key_fails_naming_the_variable_before_anything_is_launched(lambda_api: FakeLambda) -> None:
    provider = lambda_cloud(lambda_api, api_key="secret_NOT_THE_ACCOUNTS")
    with pytest.raises(ProvisionError, match="LAMBDA_API_KEY") as caught, lambda_pool(
        lambda_api, provider=provider
    ):
        pass
    assert "secret_NOT_THE_ACCOUNTS" not in str(caught.value)
    assert lambda_api.launches == []


def test_a_guardian_key_lambda_refuses_fails_the_pool_before_anything_is_launched(
    lambda_api: FakeLambda,
) -> None:
    provider = lambda_cloud(lambda_api, guardian_api_key="secret_REVOKED_GUARDIAN")
    with pytest.raises(ProvisionError, match="LAMBDA_GUARDIAN_API_KEY") as caught, lambda_pool(
        lambda_api, provider=provider
    ):
        pass
    assert "secret_REVOKED_GUARDIAN" not in str(caught.value)
    assert lambda_api.launches == [] and lambda_api.ssh_keys == {}


def test_a_missing_key_fails_naming_the_variable_before_any_request(lambda_api: FakeLambda) -> None:
    compute = sky.Compute(provider=sky.LambdaCloud(api_url=lambda_api.url), console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match="LAMBDA_API_KEY"), compute:
        pass
    assert lambda_api.keys_used == [], "no call was even tried"


def test_an_unknown_accelerator_fails_naming_the_cards_lambda_has(lambda_api: FakeLambda) -> None:
    with pytest.raises(NoOffersError, match=r"no instance type with 1x B200.*it has: .*H100"), lambda_pool(
        lambda_api, accelerator="B200"
    ):
        pass
    assert lambda_api.launches == []


def test_the_keys_appear_in_no_log_line_or_event(lambda_api: FakeLambda, tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    lambda_api.other_keys = {GUARDIAN_KEY}
    provider = lambda_cloud(lambda_api, guardian_api_key=GUARDIAN_KEY)
    with lambda_pool(lambda_api, provider=provider, logging=logging_config, on_event=events.append) as pool:
        assert square(2) >> pool == 4
    text = log_file.read_text()
    assert "skyward.lambda_instance_launched" in text
    assert API_KEY not in text and GUARDIAN_KEY not in text
    assert events and not any(API_KEY in repr(e) or GUARDIAN_KEY in repr(e) for e in events)


def test_a_vm_answering_with_another_host_key_is_never_handed_over(lambda_api: FakeLambda) -> None:
    import asyncssh

    lambda_api.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    with pytest.raises(sky.HostKeyError), lambda_pool(lambda_api, options=sky.Options(ssh_timeout=5)):
        pass
    assert len(lambda_api.terminated) == 1


def test_a_vm_that_never_answers_ssh_fails_the_start_and_is_terminated(lambda_api: FakeLambda) -> None:
    lambda_api.sshd_down = True
    options = sky.Options(provision_timeout=3, provision_retry_delay=0.2)
    compute = lambda_pool(lambda_api, options=options)
    with pytest.raises(ProvisionError, match="no SSH address after 3 s"), compute:
        pass
    assert len(lambda_api.terminated) == 1 and lambda_api.instances == {}
