"""How a spec becomes JarvisLabs offers, and how a listing's SSH command becomes an address, read
from the fake's listing without a pool."""

from __future__ import annotations

import attrs
import pytest
from fake_jarvis import SERVER_META

import skyward as sky
from skyward.errors import ConfigurationError, NoOffersError
from skyward_jarvislabs.catalog import GpuType, matching, plan
from skyward_jarvislabs.machine import instance_name, ssh_address

GPUS = [GpuType.from_api(row) for row in SERVER_META]


def offers(template: str = "pytorch", gpus: list[GpuType] = GPUS, **kwargs: object) -> list[str]:
    spec = sky.Spec(provider=sky.JarvisLabs(template=template), **kwargs)  # type: ignore[arg-type]
    return [str(r) for r in plan(spec, matching(spec, gpus, template), template=template)]


def test_spot_comes_first_where_sold_and_prices_are_per_gpu_times_the_count() -> None:
    assert offers(accelerator="A100:2") == [
        "2x A100-80GB in india-noida-01 (spot $1.38/h)",
        "2x A100-80GB in india-noida-01 (on-demand $2.58/h)",
        "2x A100-80GB in india-chennai-01 (on-demand $2.78/h)",
    ]


def test_a_vm_template_rents_on_demand_only_and_a_type_without_free_gpus_is_skipped() -> None:
    with pytest.raises(NoOffersError, match="no GPU type"):
        offers("vm", accelerator="A100")  # every listed row is for containers
    either = [attrs.evolve(g, workload="") for g in GPUS]  # a row without a workload serves both
    assert offers("vm", either, accelerator="A100", allocation="spot-if-available") == [
        "1x A100-80GB in india-noida-01 (on-demand $1.29/h)",
        "1x A100-80GB in india-chennai-01 (on-demand $1.39/h)",
    ]
    assert offers(accelerator="L4") == []


@pytest.mark.parametrize(
    ("ssh_str", "address"),
    [
        ("ssh -p 11014 root@sshc.jarvislabs.ai", ("sshc.jarvislabs.ai", 11014, "root")),
        ("ssh -o StrictHostKeyChecking=no -p 2200 ubuntu@203.0.113.7", ("203.0.113.7", 2200, "ubuntu")),
        ("ssh root@203.0.113.7", ("203.0.113.7", 22, "root")),
        ("", None),
        (None, None),
    ],
)
def test_the_address_is_read_from_the_listings_ssh_command(ssh_str: object, address: object) -> None:
    assert ssh_address(ssh_str) == address


def test_a_name_longer_than_jarvislabs_takes_fails_naming_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="shorter name"):
        instance_name("a-very-long-label-for-a-pool-1234abcd", 0)
