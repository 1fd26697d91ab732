"""Where a provider finds no offer for the spec, it raises `sky.NoOffersError`: a `ProvisionError`
(what it raised before), and a `ProvisioningError` like every provisioning failure."""

from __future__ import annotations

import pytest

import skyward as sky


def spec(**kwargs: object) -> sky.Spec:
    return sky.Spec(provider=sky.Local(), **kwargs)


def test_runpod_without_a_matching_gpu_type_raises_no_offers() -> None:
    from skyward_runpod.gpus import match_gpu_types

    with pytest.raises(sky.NoOffersError, match="no GPU type matching"):
        match_gpu_types(spec(accelerator="A100").accelerator, [], 1)


def test_runpod_above_max_hourly_cost_raises_no_offers() -> None:
    from skyward_runpod.gpus import GpuType, plan_offers

    gpu = GpuType.from_api({
        "id": "NVIDIA A100 80GB PCIe", "displayName": "A100 PCIe", "memoryInGb": 80, "maxGpuCount": 8,
        "securePrice": 1.5, "secureSpotPrice": 0.9, "communityPrice": 1.2, "communitySpotPrice": 0.7,
    })
    with pytest.raises(sky.NoOffersError, match="above max_hourly_cost"):
        plan_offers([gpu], 1, ("SECURE",), "spot-if-available", max_hourly_cost=0.1)


def test_vastai_without_a_matching_offer_raises_no_offers() -> None:
    from skyward_vastai.market import SearchFilters, describe_none

    filters = SearchFilters.for_spec(spec(accelerator="A100"), sky.VastAI(api_key="vast_KEY_0123"))
    error = describe_none(filters)
    assert isinstance(error, sky.NoOffersError) and "no offer matches" in str(error)


def test_novita_without_a_matching_product_raises_no_offers() -> None:
    from skyward_novita.catalog import no_product

    error = no_product(spec(accelerator="A100"), ["RTX 4090"])
    assert isinstance(error, sky.NoOffersError) and "no product" in str(error)


def test_verda_without_a_matching_instance_type_raises_no_offers() -> None:
    from skyward_verda.catalog import matching

    with pytest.raises(sky.NoOffersError, match="no instance type"):
        matching(spec(accelerator="A100"), [])
