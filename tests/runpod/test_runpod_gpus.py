"""From a spec's accelerator to RunPod GPU types, and the order offers are tried in."""

from __future__ import annotations

import pytest
from fake_runpod import GPU_TYPES

from skyward.accelerators import resolve
from skyward.errors import ConfigurationError, ProvisionError
from skyward.market.rental import whole_gpus
from skyward_runpod.gpus import GpuType, match_gpu_types, plan_offers

TYPES = [GpuType.from_api(raw) for raw in GPU_TYPES]


def ids(types: tuple[GpuType, ...]) -> list[str]:
    return [t.id for t in types]


def test_a_catalog_name_matches_every_runpod_type_of_that_card_cheapest_first() -> None:
    matched = match_gpu_types(resolve("A100"), TYPES, 1)
    assert ids(matched) == ["NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"]


def test_a_form_factor_narrows_the_match() -> None:
    assert ids(match_gpu_types(resolve("H100-SXM"), TYPES, 1)) == ["NVIDIA H100 80GB HBM3"]


def test_memory_narrows_the_match() -> None:
    assert ids(match_gpu_types(resolve("H100-NVL"), TYPES, 1)) == ["NVIDIA H100 NVL"]


def test_a_runpod_type_id_may_be_named_as_it_is() -> None:
    from skyward.accelerators import Accelerator

    matched = match_gpu_types(Accelerator("NVIDIA GeForce RTX 4090"), TYPES, 1)
    assert ids(matched) == ["NVIDIA GeForce RTX 4090"]


def test_an_unknown_card_names_the_close_types() -> None:
    with pytest.raises(ProvisionError, match="no GPU type matching .*close types: .*RTX 4090"):
        match_gpu_types(resolve("RTX_4080"), TYPES, 1)


def test_a_card_in_another_memory_size_lists_what_runpod_has() -> None:
    with pytest.raises(ProvisionError, match="rents A100 only as .*80GB"):
        match_gpu_types(resolve("A100-40GB"), TYPES, 1)


def test_more_gpus_than_a_pod_holds_is_refused() -> None:
    with pytest.raises(ProvisionError, match="at most 4 x L4"):
        match_gpu_types(resolve("L4"), TYPES, 8)


def test_runpod_rents_whole_gpus_only() -> None:
    with pytest.raises(ConfigurationError, match="whole GPUs"):
        whole_gpus(0.5, "RunPod")


def test_spot_if_available_tries_interruptible_first_then_on_demand() -> None:
    offers = plan_offers(match_gpu_types(resolve("RTX_4090"), TYPES, 1), 1, ("SECURE",), "spot-if-available")
    assert [(o.spot, o.price) for o in offers] == [(True, 0.35), (False, 0.69)]


def test_spot_tries_only_interruptible_and_on_demand_only_on_demand() -> None:
    types = match_gpu_types(resolve("RTX_4090"), TYPES, 1)
    assert [o.spot for o in plan_offers(types, 1, ("SECURE", "COMMUNITY"), "spot")] == [True, True]
    assert [o.spot for o in plan_offers(types, 1, ("SECURE",), "on-demand")] == [False]


def test_cheapest_orders_every_cloud_and_kind_by_price() -> None:
    types = match_gpu_types(resolve("RTX_4090"), TYPES, 2)
    offers = plan_offers(types, 2, ("SECURE", "COMMUNITY"), "cheapest")
    assert [o.price for o in offers] == [0.4, 0.68, 0.7, 1.38]


def test_a_type_without_spot_prices_has_no_interruptible_offer() -> None:
    with pytest.raises(ProvisionError, match="no interruptible L4"):
        plan_offers(match_gpu_types(resolve("L4"), TYPES, 1), 1, ("SECURE",), "spot")


def test_max_hourly_cost_drops_offers_above_it_per_node() -> None:
    types = match_gpu_types(resolve("A100"), TYPES, 1)
    assert [o.price for o in plan_offers(types, 1, ("SECURE",), "spot-if-available", 1.0)] == [0.95]
    with pytest.raises(ProvisionError, match=r"cheapest offer .* \$0\.95/h .* max_hourly_cost=0.5"):
        plan_offers(types, 1, ("SECURE",), "spot-if-available", 0.5)


def test_a_cpu_pod_is_rented_on_demand() -> None:
    assert [o.spot for o in plan_offers((), 0, ("SECURE",), "spot-if-available")] == [False]
    with pytest.raises(ProvisionError, match="on demand only"):
        plan_offers((), 0, ("SECURE",), "spot")
