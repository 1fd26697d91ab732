"""`sky offers` lists Lambda's instance types with their prices, read from the fake API: one offer
per region with capacity, and a type sold out everywhere once, without a region."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_lambda import FakeLambda
from lambda_support import API_KEY

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


def test_sky_offers_lists_lambdas_types_by_card_and_region_on_demand_only(
    tmp_path: Path, lambda_api: FakeLambda
) -> None:
    sky = Sky(tmp_path)
    sky.env.update(LAMBDA_API_KEY=API_KEY, LAMBDA_API_URL=lambda_api.url)
    offers = sky.json("offers", "--provider", "lambda")["offers"]
    found = {(o["instance_type"], o["region"]): o for o in offers if o["accelerator"] == "H100"}
    assert set(found) == {
        ("gpu_1x_h100_pcie", "us-east-1"), ("gpu_1x_h100_pcie", "us-west-1"),
        ("gpu_1x_h100_sxm5", "us-east-1"), ("gpu_1x_h100_sxm5", "europe-central-1"),
    }
    one = found["gpu_1x_h100_pcie", "us-east-1"]
    assert (one["provider"], one["accelerator_count"], one["accelerator_memory_gb"]) == ("lambda", 1, 80.0)
    assert (one["on_demand_price"], one["spot_price"]) == (pytest.approx(2.49), None)
    sold_out = [(o["instance_type"], o["region"]) for o in offers if o["accelerator"] == "GH200"]
    assert sold_out == [("gpu_1x_gh200", "")]
