"""Choosing the instance type, on the real catalog moto serves (AWS's own DescribeInstanceTypes data)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from aws_cloud import FaultProxy

import skyward as sky
from skyward_aws.catalog import InstanceType, Want, catalog, choose, closest, same_accelerator
from skyward_aws.pricing import parse_on_demand

#: The family the A10G tests choose among. moto's copy of AWS's data marks it current generation in
#: some releases and previous generation in others (5.2.5); the catalog keeps both, so the choice
#: does not depend on which.
A10G_FAMILY = "g5"


@pytest.fixture(scope="module")
def types(proxy: FaultProxy) -> tuple[InstanceType, ...]:
    """The region's catalog as the provider reads it (the g5 family is in it)."""
    ec2 = boto3.client("ec2", endpoint_url=proxy.url, region_name="us-east-1")
    found = catalog(ec2, "us-east-1", proxy.url)  # the provider's cache: pools reuse it
    assert any(kind.family == A10G_FAMILY for kind in found), f"moto's catalog has no {A10G_FAMILY} types"
    return found


def test_a_previous_generation_type_is_chosen_when_it_is_the_only_one_with_the_card() -> None:
    g5 = InstanceType(name="g5.xlarge", vcpus=4, memory_gb=16, architectures=("x86_64",),
                      accelerator="A10G", accelerator_count=1, current_generation=False)
    g6 = InstanceType(name="g6.xlarge", vcpus=4, memory_gb=16, architectures=("x86_64",),
                      accelerator="L4", accelerator_count=1)
    assert choose([g6, g5], Want(accelerator="A10G", count=1)) == [g5]


def test_a_current_generation_type_wins_over_a_previous_one_that_fits_as_well() -> None:
    old = InstanceType(name="m4.large", vcpus=2, memory_gb=8, architectures=("x86_64",),
                       current_generation=False)
    new = InstanceType(name="m7i.xlarge", vcpus=4, memory_gb=16, architectures=("x86_64",))
    assert choose([old, new], Want(vcpus=2, memory_gb=4))[0] == new


def best(types: tuple[InstanceType, ...], **spec: Any) -> InstanceType:
    return choose(types, Want.of(sky.Spec(**spec)))[0]


def test_an_a10g_gets_the_smallest_g5(types: tuple[InstanceType, ...]) -> None:
    kind = best(types, accelerator=sky.accelerators.A10G())
    assert kind.name == "g5.xlarge"
    assert (kind.accelerator, kind.accelerator_count) == ("A10G", 1)


def test_an_accelerator_named_by_string_is_the_same_request(types: tuple[InstanceType, ...]) -> None:
    assert best(types, accelerator="A10G") == best(types, accelerator=sky.accelerators.A10G())


def test_the_count_and_cpus_asked_for_pick_a_bigger_size(types: tuple[InstanceType, ...]) -> None:
    assert best(types, accelerator=sky.accelerators.A10G(count=4)).name == "g5.12xlarge"
    assert best(types, accelerator="A10G", vcpus=16).name == "g5.4xlarge"


def test_a_cpu_only_spec_gets_a_small_general_x86_type(types: tuple[InstanceType, ...]) -> None:
    kind = best(types)
    assert kind.accelerator_count == 0 and kind.architecture == "x86_64"
    assert kind.vcpus == 2 and kind.memory_gb >= 4
    assert kind.name[0] in "mcrt" and not kind.burstable


def test_cpus_memory_and_architecture_are_all_honoured(types: tuple[InstanceType, ...]) -> None:
    kind = best(types, vcpus=8, memory_gb=60, architecture="arm64")
    assert kind.vcpus >= 8 and kind.memory_gb >= 60 * 0.97 and "arm64" in kind.architectures


def test_aws_silicon_matches_the_catalogs_names(types: tuple[InstanceType, ...]) -> None:
    assert best(types, accelerator="Trainium").family == "trn1"
    assert best(types, accelerator="Inferentia2").family == "inf2"
    assert same_accelerator("T4G", "T4g")


def test_a_spec_nothing_fits_names_the_closest_types(types: tuple[InstanceType, ...]) -> None:
    want = Want.of(sky.Spec(accelerator=sky.accelerators.A10G(count=64)))
    assert choose(types, want) == []
    assert {k.family for k in closest(types, want)} == {"g5"}


def test_on_demand_prices_are_read_from_a_price_list_answer() -> None:
    product = {"terms": {"OnDemand": {"X.Y": {"priceDimensions": {"X.Y.Z": {
        "unit": "Hrs", "pricePerUnit": {"USD": "1.0060000000"}}}}}}}
    assert parse_on_demand([json.dumps(product)]) == pytest.approx(1.006)
    assert parse_on_demand([]) is None
