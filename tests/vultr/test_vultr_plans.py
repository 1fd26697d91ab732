"""From a spec to the Vultr plans and regions a node is tried on, read from the fake's listing:
a plan's GPU count is its VRAM over the card's memory, slices of a card are never rented, and the
offers go cheapest first, in the regions allowed."""

from __future__ import annotations

from typing import Any

from fake_vultr import PLANS

import skyward as sky
from skyward.spec import Spec
from skyward_vultr.catalog import Plan, matching, plan

LISTED = [Plan.from_api(row) for row in PLANS]


def tried(accelerator: Any, regions: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    spec = Spec(provider=sky.Vultr(), accelerator=accelerator)
    return [(r.offer.instance_type, r.offer.region) for r in plan(spec, matching(spec, LISTED), regions)]


def test_two_gpus_take_the_plan_whose_vram_holds_two_cards() -> None:
    assert tried(sky.accelerators.A100(count=2)) == [("vcg-a100-24c-240g-160vram", "ewr")]


def test_one_gpu_never_takes_a_slice_of_a_card_and_goes_cheapest_first_in_the_regions_allowed() -> None:
    assert tried("A100") == [("vcg-a100-12c-120g-80vram", "ewr"), ("vcg-a100-12c-120g-80vram", "ord")]
    assert tried("A100", regions=("ord",)) == [("vcg-a100-12c-120g-80vram", "ord")]


def test_a_plan_reads_its_card_count_memory_and_price() -> None:
    (h100,) = [p for p in LISTED if p.card == "H100"]
    assert (h100.gpus, h100.gpu_memory_gb, h100.vcpus, h100.memory_gb) == (1, 80.0, 16, 240.0)
    assert (h100.price, h100.regions) == (2.99, ("sea",))
