"""`sky.VastAI`: the key, the name it registers, what it asks Vast for, and how it reads answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from vast_server import FakeVast
from vast_support import API_KEY, vast_pool, vast_provider

import skyward as sky
from skyward.accelerators import A100, H100, T4, Custom, TPUv5e, resolve
from skyward.errors import ConfigurationError, ProvisionError
from skyward.providers.base import Cluster, Instance
from skyward.spec import Spec
from skyward_vastai import VastAI
from skyward_vastai.gpus import gpu_names
from skyward_vastai.machine import ssh_address


def test_sky_vastai_and_the_name_vastai_resolve_to_this_config() -> None:
    assert sky.VastAI is VastAI
    assert isinstance(Spec(provider="vastai").provider, VastAI)


def test_a_missing_api_key_fails_at_pool_start_naming_vast_api_key(
    vast: FakeVast, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))  # no ~/.vast_api_key either
    with pytest.raises(ConfigurationError, match="VAST_API_KEY"), vast_pool(vast, provider=sky.VastAI(
        server_url=vast.url
    )):
        pass
    assert vast.requests == []


def test_the_key_is_read_from_vast_api_key_when_none_is_passed(
    vast: FakeVast, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAST_API_KEY", API_KEY)
    spec = Spec(accelerator="RTX 4090", allocation="on-demand")
    assert sky.VastAI(server_url=vast.url).hourly_price(spec) == 0.31
    assert {auth for *_, auth in vast.requests} == {f"Bearer {API_KEY}"}


def test_the_api_key_is_kept_out_of_the_configs_repr() -> None:
    config = sky.VastAI(api_key=API_KEY)
    assert API_KEY not in repr(config)
    assert API_KEY not in str(config)


@pytest.mark.parametrize(("accelerator", "names"), [
    (resolve("RTX 4090"), ("RTX 4090",)),
    (resolve("RTX A6000"), ("RTX A6000",)),
    (A100(form_factor="SXM"), ("A100 SXM4",)),
    (H100(form_factor="PCIe"), ("H100 PCIE",)),
    (T4(), ("Tesla T4",)),
    (Custom("RTX 3090 Ti"), ("RTX 3090 Ti",)),
])
def test_accelerators_map_to_the_gpu_names_vast_offers_carry(
    accelerator: object, names: tuple[str, ...]
) -> None:
    assert gpu_names(accelerator) == names  # type: ignore[arg-type]


def test_an_accelerator_vast_does_not_rent_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="TPU"):
        gpu_names(TPUv5e())


def test_the_ssh_address_is_the_direct_port_when_mapped_else_the_proxy() -> None:
    direct = {"public_ipaddr": "203.0.113.7", "ports": {"22/tcp": [{"HostPort": "41022"}]},
              "ssh_host": "ssh4.vast.ai", "ssh_port": 30110}
    proxy = {**direct, "ports": {}}
    assert ssh_address(direct) == ("203.0.113.7", 41022)
    assert ssh_address(proxy) == ("ssh4.vast.ai", 30110)
    assert ssh_address({"ports": {}}) is None


def test_the_spec_becomes_the_search_filters(vast: FakeVast) -> None:
    spec = Spec(accelerator=A100(memory="40GB", count=2), vcpus=8, memory_gb=32, disk_gb=100,
                region="de", max_hourly_cost=3, allocation="on-demand")
    vast_provider(vast, min_reliability=0.98).hourly_price(spec)
    (_, _, query, _), = vast.requests
    assert query["gpu_name"] == {"in": ["A100 SXM4", "A100 PCIE", "A100X"]}
    assert query["num_gpus"] == {"eq": 2}
    assert query["gpu_ram"] == {"gte": 38000}
    assert query["cpu_cores_effective"] == {"gte": 8}
    assert query["cpu_ram"] == {"gte": 32000}
    assert query["disk_space"] == {"gte": 100}
    assert query["geolocation"] == {"in": ["DE"]}
    assert query["dph_total"] == {"lte": 3}
    assert query["reliability"] == {"gte": 0.98}
    assert query["verified"] == {"eq": True}
    assert query["type"] == "on-demand"


def test_hourly_price_is_the_cheapest_matching_offer_for_the_allocation(vast: FakeVast) -> None:
    config = vast_provider(vast)
    assert config.hourly_price(Spec(accelerator="RTX 4090", allocation="on-demand")) == pytest.approx(0.31)
    assert config.hourly_price(Spec(accelerator="RTX 4090", allocation="spot")) == pytest.approx(0.11)
    assert config.hourly_price(Spec(accelerator="H100")) is None


def test_no_matching_offer_fails_naming_the_search_before_anything_is_rented(vast: FakeVast) -> None:
    with pytest.raises(ProvisionError, match=r"no offer matches .*H100"), vast_pool(
        vast, accelerator="H100"
    ):
        pass
    assert vast.created == []


def test_destroying_an_instance_that_is_already_gone_is_fine(vast: FakeVast) -> None:
    provider = vast_provider(vast).create()
    cluster = Cluster(id="pool-gone", provider="vastai", spec=None)
    asyncio.run(provider.destroy(cluster, [Instance(id="424242", node=0)]))
    assert ("DELETE", "/api/v0/instances/424242/") in [(m, p) for m, p, *_ in vast.requests]
