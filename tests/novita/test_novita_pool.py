"""A pool on Novita, end to end against the fake API: instances created, used over SSH, deleted.

Every instance is a real sshd the fake started with the keys the provider put in the instance's
envs, so these tests cross the boundary a real container does: the create request (its size
limits included), the start script carried in the envs, the pinned host key, the bootstrap and
the workers, and the deletion confirmed before the pool reports its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cloud_workloads import assert_every_node_answers, square
from fake_novita import FakeNovita
from novita_support import API_KEY, novita, novita_pool

import skyward as sky
from skyward.errors import CapacityError, ProvisionError


def test_a_two_node_spot_pool_runs_tasks_and_deletes_its_instances(novita_api: FakeNovita) -> None:
    with novita_pool(novita_api, nodes=2, accelerator="RTX_4090", allocation="spot") as pool:
        assert_every_node_answers(pool, 2, "novita")
        created = set(novita_api.instances)
    assert [(b["billingMode"], b["productId"]) for b in novita_api.creates] == [("spot", "prod-4090-a")] * 2
    assert sorted(novita_api.deleted) == sorted(created)


def test_an_on_demand_pool_creates_on_demand_instances_named_for_the_pool(novita_api: FakeNovita) -> None:
    with novita_pool(novita_api, accelerator="A100", allocation="on-demand") as pool:
        assert square(3) >> pool == 9
    (body,) = novita_api.creates
    assert (body["billingMode"], body["productId"], body["gpuNum"]) == ("onDemand", "prod-a100", 1)
    assert body["name"] == f"skyward-{pool.name}-0"


def test_a_docker_image_from_sky_containers_reaches_the_create_request(novita_api: FakeNovita) -> None:
    image = sky.containers.pytorch("2.8", cuda="12.8")
    with novita_pool(novita_api, provider=novita(novita_api, docker_image=image), accelerator="RTX_4090"):
        pass
    assert [body["imageUrl"] for body in novita_api.creates] == ["nvcr.io/nvidia/pytorch:25.06-py3"]


def test_a_capacity_refusal_falls_over_to_the_next_product(novita_api: FakeNovita) -> None:
    novita_api.no_capacity = {"prod-4090-a"}
    with novita_pool(novita_api, accelerator="RTX_4090", allocation="on-demand") as pool:
        assert square(4) >> pool == 16
    assert [body["productId"] for body in novita_api.creates] == ["prod-4090-a", "prod-4090-b"]


def test_spot_without_capacity_fails_with_a_capacity_error_within_the_provision_timeout(
    novita_api: FakeNovita,
) -> None:
    novita_api.no_capacity = {"spot"}
    options = sky.Options(provision_timeout=2, provision_retry_delay=0.2)
    compute = novita_pool(novita_api, accelerator="RTX_4090", allocation="spot", options=options)
    with pytest.raises(CapacityError, match="no capacity"), compute:
        pass
    assert len(novita_api.creates) >= 2, "capacity errors are retried"
    assert all(body["billingMode"] == "spot" for body in novita_api.creates)


def test_a_failed_delete_call_is_retried_and_the_deletion_confirmed(novita_api: FakeNovita) -> None:
    novita_api.delete_errors = 1
    with novita_pool(novita_api, accelerator="RTX_4090") as pool:
        assert square(5) >> pool == 25
        (created,) = novita_api.instances
    assert novita_api.deleted == [created]


def test_a_refused_key_fails_naming_the_variable_before_anything_is_created(novita_api: FakeNovita) -> None:
    provider = novita(novita_api, api_key="sk_NOT_THE_ACCOUNTS_KEY")
    with pytest.raises(ProvisionError, match="NOVITA_API_KEY") as caught, novita_pool(
        novita_api, provider=provider, accelerator="RTX_4090"
    ):
        pass
    assert "sk_NOT_THE_ACCOUNTS_KEY" not in str(caught.value)
    assert novita_api.creates == []


def test_a_missing_key_fails_naming_the_variable_before_any_request(novita_api: FakeNovita) -> None:
    with pytest.raises(sky.ConfigurationError, match="NOVITA_API_KEY"), sky.Compute(
        provider=sky.Novita(api_url=novita_api.url), accelerator="RTX_4090", console=False, logging=False
    ):
        pass
    assert novita_api.creates == []


def test_an_accelerator_novita_lacks_fails_naming_its_products(novita_api: FakeNovita) -> None:
    with pytest.raises(ProvisionError, match="no product with 1x H100.*products: "), novita_pool(
        novita_api, accelerator="H100"
    ):
        pass
    assert novita_api.creates == []


def test_the_key_appears_in_no_log_line_or_event(novita_api: FakeNovita, tmp_path: Path) -> None:
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    compute = novita_pool(novita_api, accelerator="RTX_4090", logging=logging_config, on_event=events.append)
    with compute as pool:
        assert square(2) >> pool == 4
    text = log_file.read_text()
    assert "skyward.novita_instance_created" in text
    assert API_KEY not in text
    assert events and not any(API_KEY in repr(event) for event in events)


def test_an_instance_that_never_answers_ssh_fails_the_start_and_is_deleted(novita_api: FakeNovita) -> None:
    novita_api.sshd_down = True
    options = sky.Options(provision_timeout=3, provision_retry_delay=0.2, ssh_timeout=3)
    with pytest.raises(ConnectionError, match="Could not connect"), novita_pool(
        novita_api, accelerator="RTX_4090", options=options
    ):
        pass
    assert len(novita_api.deleted) == 1
