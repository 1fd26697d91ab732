"""The provider's API half against the fake RunPod, without workers: offers, fallback, clean-up."""

from __future__ import annotations

import asyncio
from typing import Any

from fake_runpod import FakeRunPod
from runpod_support import runpod
from ssh_hosts import loopback

import skyward as sky
from skyward.providers.base import Instance
from skyward_runpod.pods import pod_name


def provision(config: sky.RunPod, spec: sky.Spec, pool_id: str, nodes: int = 1) -> list[Instance]:
    """prepare + provision + terminate + teardown, as a pool would; returns what was provisioned."""
    provider = config.create()
    provider.options = sky.Options()

    async def run() -> list[Instance]:
        cluster = await provider.prepare(spec, pool_id)
        instances: list[Instance] = []
        try:
            instances = await provider.provision(cluster, list(range(nodes)))
            return instances
        finally:
            await provider.terminate(cluster, instances)
            await provider.teardown(cluster)

    return asyncio.run(run())


def test_interruptible_without_capacity_falls_back_to_on_demand(runpod_api: FakeRunPod) -> None:
    runpod_api.no_capacity = {"interruptible"}
    config = runpod(runpod_api)
    spec = sky.Spec(provider=config, accelerator="RTX_4090", allocation="spot-if-available")
    [instance] = provision(config, spec, "pool-fallback")
    assert [body["interruptible"] for body in runpod_api.creates] == [True, False]
    assert instance.spot is False
    assert instance.hourly_rate == 0.69  # secure cloud, on demand
    assert instance.public_ip.startswith(loopback(1, 1)[:-1]) and instance.ssh_port > 0


def test_a_pod_request_carries_keys_ssh_port_pool_name_and_the_start_command(runpod_api: FakeRunPod) -> None:
    config = runpod(runpod_api, cloud_type="COMMUNITY", data_center_ids=["EU-RO-1"])
    spec = sky.Spec(provider=config, accelerator=sky.accelerators.A100(count=2), allocation="on-demand")
    provision(config, spec, "pool-body")
    [body] = runpod_api.creates
    assert body["name"] == pod_name("pool-body", 0)
    assert body["gpuTypeIds"] == ["NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"]  # cheapest first
    assert (body["gpuCount"], body["cloudType"], body["interruptible"]) == (2, "COMMUNITY", False)
    assert body["dataCenterIds"] == ["EU-RO-1"]
    assert body["ports"] == ["22/tcp"]
    assert body["dockerEntrypoint"] == ["bash", "-c"] and "sshd" in body["dockerStartCmd"][0]
    assert set(body["env"]) == {"SKYWARD_SSH_HOST_KEY", "PUBLIC_KEY", "SKYWARD_POOL", "SKYWARD_GUARDIAN"}


def test_a_pod_whose_creation_answer_was_lost_is_found_by_name_and_deleted_at_teardown(
    runpod_api: FakeRunPod,
) -> None:
    config = runpod(runpod_api)
    provider = config.create()
    provider.options = sky.Options()
    spec = sky.Spec(provider=config, accelerator="RTX_4090")

    async def run() -> Any:
        cluster = await provider.prepare(spec, "pool-lost")
        body = {"name": pod_name("pool-lost", 3), "imageName": "img", "gpuTypeIds": ["NVIDIA L4"]}
        await provider.api.create_pod(body)  # created, but the pool never learnt its id
        await provider.teardown(cluster)

    asyncio.run(run())
    assert len(runpod_api.deleted) == 1 and runpod_api.pods == {}


def test_hourly_price_reads_runpods_listing_for_the_specs_allocation(runpod_api: FakeRunPod) -> None:
    config = runpod(runpod_api)
    on_demand = sky.Spec(provider=config, accelerator="A100", allocation="on-demand")
    spot = sky.Spec(provider=config, accelerator="A100", allocation="spot-if-available")
    assert config.hourly_price(on_demand) == 1.64  # A100 PCIe, secure cloud
    assert config.hourly_price(spot) == 0.95
    assert config.hourly_price(sky.Spec(provider=config)) is None  # CPU pods are not in the listing
    assert runpod_api.creates == []
