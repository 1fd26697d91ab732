"""`sky offers` lists Hyperstack's flavors with their prices, read from the fake Infrahub API."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_infrahub import FakeInfrahub
from hyperstack_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


def test_sky_offers_lists_the_flavors_of_a_card_in_each_region_priced_per_gpu(
    tmp_path: Path, hyperstack_api: FakeInfrahub
) -> None:
    sky = Sky(tmp_path)
    sky.env.update(HYPERSTACK_API_KEY=API_KEY, HYPERSTACK_API_URL=hyperstack_api.url)
    listing = sky.json("offers", "--provider", "hyperstack", "--accelerator", "A100")
    offers = {(o["instance_type"], o["region"]): o for o in listing["offers"]}
    assert set(offers) == {("n3-A100x1", "CANADA-1"), ("n3-A100x2", "CANADA-1"), ("n3-A100x1", "NORWAY-1")}
    one = offers["n3-A100x1", "CANADA-1"]
    assert (one["provider"], one["accelerator"], one["accelerator_memory_gb"]) == ("hyperstack", "A100", 80.0)
    assert (one["on_demand_price"], one["spot_price"]) == (pytest.approx(1.35), None)
    assert offers["n3-A100x2", "CANADA-1"]["on_demand_price"] == pytest.approx(2.70)
