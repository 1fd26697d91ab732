"""A pool on Massed Compute, end to end against the fake API: machines deployed, used over SSH,
terminated.

Every machine here is a real sshd the fake started with the host key from the machine's startup
command and the login key from the deploy's `sshKey`, so these tests cross the same boundary a
real machine does: the bearer key, the deploy request, the startup command, the pinned host key,
the bootstrap and the workers, and the termination confirmed before the pool reports its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_massed import FakeMassed
from massed_support import API_KEY, massed, massed_pool

import skyward as sky
from skyward.errors import CapacityError, NoOffersError, ProvisionError


def test_a_two_node_pool_runs_tasks_on_its_machines_and_terminates_them_on_exit(
    massed_api: FakeMassed,
) -> None:
    with massed_pool(massed_api, nodes=2) as pool:
        assert len(massed_api.instances) == 2
        assert_every_node_answers(pool, 2, "massedcompute")
        names = sorted(row["name"] for row in massed_api.instances.values())
        created = set(massed_api.instances)
    assert names == [f"skyward-{pool.name}-0".lower(), f"skyward-{pool.name}-1".lower()]
    assert {body["productName"] for body in massed_api.launches} == {"gpu_1x_l40"}  # 1x, not 2x
    assert {body["regionName"] for body in massed_api.launches} == {"any"}
    assert {body["imageId"] for body in massed_api.launches} == {84}  # the first image named "ubuntu"
    assert sorted(massed_api.terminated) == sorted(created)


def test_a_capacity_refusal_falls_over_to_the_next_offer(massed_api: FakeMassed) -> None:
    massed_api.no_capacity = {"us-central-2"}
    provider = massed(massed_api, regions=("us-central-2", "us-central-3"))
    with massed_pool(massed_api, provider=provider, accelerator="A6000") as pool:
        assert square(4) >> pool == 16
    refused, taken = massed_api.launches
    assert refused["regionName"] == "us-central-2"
    assert taken["regionName"] == "us-central-3", "sold out there: the next offer is taken instead"


def test_no_capacity_anywhere_fails_with_a_capacity_error_within_the_provision_timeout(
    massed_api: FakeMassed,
) -> None:
    massed_api.no_capacity = {"gpu_1x_h100_sxm5"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    with (
        pytest.raises(CapacityError, match="no capacity"),
        massed_pool(massed_api, accelerator="H100", options=options),
    ):
        pass
    assert len(massed_api.launches) >= 2, "capacity errors are retried"


def test_spot_is_refused_since_massed_compute_sells_none(massed_api: FakeMassed) -> None:
    with pytest.raises(NoOffersError, match="sells no spot"), massed_pool(massed_api, allocation="spot"):
        pass
    assert massed_api.launches == []


def test_a_failed_terminate_call_is_retried_and_the_termination_confirmed(massed_api: FakeMassed) -> None:
    massed_api.terminate_errors = 1
    with massed_pool(massed_api) as pool:
        assert square(5) >> pool == 25
        (created,) = massed_api.instances
    assert massed_api.terminated == [created]
    assert massed_api.terminate_errors == 0


def test_a_refused_key_fails_naming_the_variable_before_anything_is_deployed(massed_api: FakeMassed) -> None:
    provider = massed(massed_api, api_key="massed_NOT_THE_ACCOUNTS")
    with (
        pytest.raises(ProvisionError, match="MASSED_API_KEY") as caught,
        massed_pool(massed_api, provider=provider),
    ):
        pass
    assert "massed_NOT_THE_ACCOUNTS" not in str(caught.value)
    assert massed_api.launches == []


def test_a_missing_key_fails_naming_the_variable_before_any_request(massed_api: FakeMassed) -> None:
    compute = sky.Compute(provider=sky.MassedCompute(api_url=massed_api.url), console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match="MASSED_API_KEY"), compute:
        pass


def test_an_unknown_accelerator_fails_naming_close_gpus(massed_api: FakeMassed) -> None:
    with (
        pytest.raises(NoOffersError, match=r"no product with 1x B200.*close GPUs"),
        massed_pool(massed_api, accelerator="B200"),
    ):
        pass
    assert massed_api.launches == []


def test_an_image_name_no_image_has_fails_naming_the_images(massed_api: FakeMassed) -> None:
    provider = massed(massed_api, image="windows")
    with (
        pytest.raises(sky.ConfigurationError, match=r"images: Art \(7\), Ubuntu"),
        massed_pool(massed_api, provider=provider),
    ):
        pass


def test_the_key_appears_in_no_log_line_or_event(massed_api: FakeMassed, tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    with massed_pool(massed_api, logging=logging_config, on_event=events.append) as pool:
        assert square(2) >> pool == 4
    text = log_file.read_text()
    assert "skyward.massedcompute_instance_created" in text
    assert API_KEY not in text
    assert events and not any(API_KEY in repr(event) for event in events)


def test_a_machine_answering_with_another_host_key_is_never_handed_over(massed_api: FakeMassed) -> None:
    import asyncssh

    from skyward_massedcompute import provider

    massed_api.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    provider.GRACE, grace = 0.0, provider.GRACE
    try:
        with pytest.raises(sky.HostKeyError), massed_pool(massed_api, options=sky.Options(ssh_timeout=5)):
            pass
    finally:
        provider.GRACE = grace
    assert len(massed_api.terminated) == 1
