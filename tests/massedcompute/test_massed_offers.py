"""`sky offers` lists Massed Compute's products with their prices, read from the fake API."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_massed import FakeMassed
from massed_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


def test_sky_offers_lists_the_products_by_card_with_their_prices(
    tmp_path: Path, massed_api: FakeMassed
) -> None:
    sky = Sky(tmp_path)
    sky.env.update(MASSED_API_KEY=API_KEY, MASSED_API_URL=massed_api.url)
    listing = sky.json("offers", "--provider", "massedcompute", "--accelerator", "L40")
    offers = {o["instance_type"]: o for o in listing["offers"]}
    assert set(offers) == {"gpu_1x_l40", "gpu_2x_l40"}
    one = offers["gpu_1x_l40"]
    assert (one["provider"], one["accelerator"], one["accelerator_memory_gb"]) == (
        "massedcompute",
        "L40",
        48.0,
    )
    assert (one["on_demand_price"], one["spot_price"]) == (pytest.approx(0.99), None)
    assert offers["gpu_2x_l40"]["accelerator_count"] == 2
