"""A pool on JarvisLabs, end to end against the fake API: instances created, used over SSH,
destroyed.

Every instance here is a real sshd the fake started with the host key and the login key of the
instance's startup script, at the address and port of its `ssh_str`, so these tests cross the
same boundary a real instance does: the bearer key, the uploaded script, the create request, the
pinned host key, the bootstrap and the workers, and the destroy confirmed before the pool reports
its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_jarvis import FakeJarvis
from jarvis_support import API_KEY, jarvis, jarvis_pool

import skyward as sky
from skyward.errors import CapacityError, NoOffersError, ProvisionError


def test_a_two_node_pool_runs_tasks_on_spot_instances_and_destroys_them_on_exit(
    jarvis_api: FakeJarvis, tmp_path: Path
) -> None:
    jarvis_api.destroy_errors = 1  # a failed destroy is retried and the destroy confirmed
    jarvis_api.booting_reads = 2  # instances are "Creating", with no address, before they run
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    with jarvis_pool(jarvis_api, nodes=2, logging=logging_config, on_event=events.append) as pool:
        assert_every_node_answers(pool, 2, "jarvislabs")
        names = sorted(row["name"] for row in jarvis_api.instances.values())
        created = set(jarvis_api.instances)
        assert jarvis_api.scripts == {}, "each startup script (it holds the key) goes once its instance is up"
    assert names == [f"skyward-{pool.name}-0".lower(), f"skyward-{pool.name}-1".lower()]
    sent = {(b["gpu_type"], b["num_gpus"], b["region"], b["is_spot"]) for b in jarvis_api.launches}
    assert sent == {("A100-80GB", 1, "india-noida-01", True)}, "spot where sold, cheapest first"
    assert sorted(jarvis_api.destroyed) == sorted(created)
    assert set(jarvis_api.booting.values()) == {0}, "each was read while still creating"
    text = log_file.read_text()
    assert "skyward.jarvislabs_instance_created" in text
    assert API_KEY not in text
    assert events and not any(API_KEY in repr(event) for event in events)


def test_a_region_without_free_gpus_falls_over_to_the_next_offer(jarvis_api: FakeJarvis) -> None:
    jarvis_api.no_capacity = {"india-noida-01"}
    with jarvis_pool(jarvis_api, allocation="on-demand") as pool:
        assert square(4) >> pool == 16
    refused, taken = jarvis_api.launches
    assert (refused["region"], refused["is_spot"]) == ("india-noida-01", False)
    assert taken["region"] == "india-chennai-01", "no free GPUs there: the next offer is taken instead"


def test_no_free_gpus_anywhere_fails_with_a_capacity_error_and_leaves_no_script(
    jarvis_api: FakeJarvis,
) -> None:
    jarvis_api.no_capacity = {"H100"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    with (
        pytest.raises(CapacityError, match="no capacity"),
        jarvis_pool(jarvis_api, accelerator="H100", options=options),
    ):
        pass
    assert len(jarvis_api.launches) >= 2, "capacity errors are retried"


def test_a_refused_key_fails_naming_the_variable_before_anything_is_created(jarvis_api: FakeJarvis) -> None:
    provider = jarvis(jarvis_api, api_key="jl_NOT_THE_ACCOUNTS")
    with (
        pytest.raises(ProvisionError, match="JL_API_KEY") as caught,
        jarvis_pool(jarvis_api, provider=provider),
    ):
        pass
    assert "jl_NOT_THE_ACCOUNTS" not in str(caught.value)
    assert jarvis_api.launches == []


def test_a_missing_key_fails_naming_the_variable_before_any_request(jarvis_api: FakeJarvis) -> None:
    compute = sky.Compute(provider=sky.JarvisLabs(api_url=jarvis_api.url), console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match="JL_API_KEY"), compute:
        pass


def test_an_unknown_accelerator_fails_naming_close_gpus(jarvis_api: FakeJarvis) -> None:
    with (
        pytest.raises(NoOffersError, match=r"no GPU type with 1x B200.*close GPUs"),
        jarvis_pool(jarvis_api, accelerator="B200"),
    ):
        pass
    assert jarvis_api.launches == []
