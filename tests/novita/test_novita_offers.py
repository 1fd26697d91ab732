"""`sky offers` lists Novita's GPU products with their prices, read from the fake API."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_novita import FakeNovita
from novita_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


def test_sky_offers_lists_novitas_products_per_gpu_count_with_both_prices(
    tmp_path: Path, novita_api: FakeNovita
) -> None:
    sky = Sky(tmp_path)
    sky.env.update(NOVITA_API_KEY=API_KEY, NOVITA_API_URL=novita_api.url)
    listing = sky.json("offers", "--provider", "novita", "--accelerator", "RTX_4090")
    two = {o["region"]: o for o in listing["offers"] if o["accelerator_count"] == 2}
    assert set(two) == {"us-east", "eu-west"}
    assert two["us-east"]["on_demand_price"] == pytest.approx(2 * 0.35)
    assert two["us-east"]["spot_price"] == pytest.approx(2 * 0.18)
    assert {o["provider"] for o in listing["offers"]} == {"novita"}
