"""`sky offers` lists Vultr's whole-GPU plans in each region that can deploy them, with their
hourly prices, read from the fake API across its pages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_vultr import FakeVultr
from vultr_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


def test_sky_offers_lists_vultrs_plans_by_card_region_and_price_on_demand_only(
    tmp_path: Path, vultr_api: FakeVultr
) -> None:
    sky = Sky(tmp_path)
    sky.env.update(VULTR_API_KEY=API_KEY, VULTR_API_URL=vultr_api.url)
    listing = sky.json("offers", "--provider", "vultr", "--accelerator", "A100")
    offers = {(o["instance_type"], o["region"]): o for o in listing["offers"]}
    assert set(offers) == {
        ("vcg-a100-12c-120g-80vram", "ewr"),
        ("vcg-a100-12c-120g-80vram", "ord"),
        ("vcg-a100-24c-240g-160vram", "ewr"),
    }, "the plan with a 4 GB slice of a card is not offered"
    one = offers[("vcg-a100-12c-120g-80vram", "ewr")]
    assert (one["provider"], one["accelerator"], one["accelerator_count"]) == ("vultr", "A100", 1)
    assert one["accelerator_memory_gb"] == 80.0 and one["vcpus"] == 12 and one["memory_gb"] == 120.0
    assert (one["on_demand_price"], one["spot_price"]) == (pytest.approx(2.397), None)
    assert offers[("vcg-a100-24c-240g-160vram", "ewr")]["accelerator_count"] == 2
