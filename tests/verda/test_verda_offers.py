"""`sky offers` lists Verda's instance types with their prices, read from the fake API."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_verda import FakeVerda
from verda_support import CLIENT_ID, CLIENT_SECRET

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


def test_sky_offers_lists_verdas_types_by_card_with_both_prices(tmp_path: Path, verda_api: FakeVerda) -> None:
    sky = Sky(tmp_path)
    sky.env.update(VERDA_CLIENT_ID=CLIENT_ID, VERDA_CLIENT_SECRET=CLIENT_SECRET, VERDA_API_URL=verda_api.url)
    listing = sky.json("offers", "--provider", "verda", "--accelerator", "A100")
    offers = {o["instance_type"]: o for o in listing["offers"]}
    assert set(offers) == {"1A100.22V", "2A100.44V", "1A100.40S.22V"}
    one = offers["1A100.22V"]
    assert (one["provider"], one["accelerator"], one["accelerator_memory_gb"]) == ("verda", "A100", 80.0)
    assert (one["on_demand_price"], one["spot_price"]) == (pytest.approx(1.29), pytest.approx(0.45))
    assert offers["2A100.44V"]["accelerator_count"] == 2
