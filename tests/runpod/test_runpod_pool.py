"""A pool on RunPod, end to end against the fake API: pods created, used over SSH, deleted.

Every pod here is a real sshd the fake started with the keys the provider put in the pod's env,
so these tests cross the same boundary a real pod does: the create request, the start command's
keys, the pinned host key, the bootstrap and the workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_runpod import FakeRunPod
from runpod_support import API_KEY, runpod, runpod_pool

import skyward as sky
from skyward.errors import CapacityError, ProvisionError


def test_a_two_node_pool_runs_tasks_on_its_pods_and_deletes_them_on_exit(runpod_api: FakeRunPod) -> None:
    with runpod_pool(runpod_api, nodes=2, accelerator="A100") as pool:
        assert len(runpod_api.pods) == 2
        assert_every_node_answers(pool, 2, "runpod")
        created = set(runpod_api.pods)
    assert sorted(runpod_api.deleted) == sorted(created)
    assert runpod_api.pods == {}


def test_the_api_key_appears_in_no_log_line_or_event(runpod_api: FakeRunPod, tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    with runpod_pool(runpod_api, nodes=1, logging=logging_config, on_event=events.append) as pool:
        assert square(3) >> pool == 9
    text = log_file.read_text()
    assert "skyward.runpod_pod_created" in text  # the provider did log, at length
    assert API_KEY not in text
    assert events and not any(API_KEY in repr(event) for event in events)


def test_an_unknown_accelerator_fails_naming_close_types_before_any_pod_is_created(
    runpod_api: FakeRunPod,
) -> None:
    compute = runpod_pool(runpod_api, accelerator="B200")
    with pytest.raises(ProvisionError, match="no GPU type matching B200.*close types"), compute:
        pass
    assert runpod_api.creates == []


def test_a_refused_api_key_fails_naming_the_variable(runpod_api: FakeRunPod) -> None:
    provider = runpod(runpod_api, api_key="rpa_NOT_THE_ACCOUNTS_KEY")
    compute = runpod_pool(runpod_api, provider=provider, accelerator="A100")
    with pytest.raises(ProvisionError, match="RUNPOD_API_KEY") as caught, compute:
        pass
    assert "rpa_NOT_THE_ACCOUNTS_KEY" not in str(caught.value)
    assert runpod_api.creates == []


def test_spot_without_capacity_fails_with_a_capacity_error_within_the_provision_timeout(
    runpod_api: FakeRunPod,
) -> None:
    import time

    runpod_api.no_capacity = {"interruptible"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    started = time.monotonic()
    compute = runpod_pool(runpod_api, accelerator="RTX_4090", allocation="spot", options=options)
    with pytest.raises(CapacityError, match="no capacity"), compute:
        pass
    assert time.monotonic() - started < 15
    assert len(runpod_api.creates) >= 2, "capacity errors are retried"
    assert all(body["interruptible"] is True for body in runpod_api.creates)


def test_a_pod_answering_with_another_host_key_is_refused_and_still_deleted(runpod_api: FakeRunPod) -> None:
    import asyncssh

    runpod_api.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    compute = runpod_pool(runpod_api, accelerator="A100", options=sky.Options(ssh_timeout=5))
    with pytest.raises(sky.HostKeyError), compute:
        pass
    assert len(runpod_api.deleted) == 1
    assert runpod_api.pods == {}

