"""`sky offers` lists GCP's machines by card, with both prices from the package's table, once
Application Default Credentials are found (without them GCP is skipped, naming where they go)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "cli"))

from cli_support import Sky  # noqa: E402


def with_credentials(tmp_path: Path) -> Sky:
    """A user with a service account key named by GOOGLE_APPLICATION_CREDENTIALS (offers only
    look for it: the table calls nothing)."""
    key = tmp_path / "key.json"
    key.write_text('{"type": "service_account", "project_id": "p", "client_email": "a@p.iam"}')
    sky = Sky(tmp_path)
    sky.env["GOOGLE_APPLICATION_CREDENTIALS"] = str(key)
    return sky


def test_without_credentials_gcp_is_skipped_naming_where_they_go(tmp_path: Path) -> None:
    done = Sky(tmp_path)("offers", "--provider", "gcp", "--accelerator", "H100")
    assert done.returncode == 1
    assert "gcp: skipped, no credentials found" in done.stderr
    assert "GOOGLE_APPLICATION_CREDENTIALS" in done.stderr


@pytest.mark.parametrize(
    ("card", "machines"),
    [
        ("H100", {"a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g", "a3-highgpu-8g"}),
        (
            "L4",
            {
                "g2-standard-4",
                "g2-standard-8",
                "g2-standard-16",
                "g2-standard-24",
                "g2-standard-48",
                "g2-standard-96",
            },
        ),
        (
            "V100",
            {
                "n1-standard-8+1xnvidia-tesla-v100",
                "n1-standard-16+2xnvidia-tesla-v100",
                "n1-standard-32+4xnvidia-tesla-v100",
                "n1-standard-64+8xnvidia-tesla-v100",
            },
        ),
    ],
)
def test_sky_offers_lists_the_machine_families_of_a_card(
    tmp_path: Path, card: str, machines: set[str]
) -> None:
    listing = with_credentials(tmp_path).json("offers", "--provider", "gcp", "--accelerator", card)
    assert {o["instance_type"] for o in listing["offers"]} == machines


def test_an_offer_carries_both_prices_and_an_a3_h100_is_spot_only_below_eight_gpus(tmp_path: Path) -> None:
    listing = with_credentials(tmp_path).json("offers", "--provider", "gcp")
    offers = {o["instance_type"]: o for o in listing["offers"]}
    t4 = offers["n1-standard-4+1xnvidia-tesla-t4"]
    assert (t4["provider"], t4["accelerator"], t4["accelerator_count"], t4["region"]) == (
        "gcp",
        "T4",
        1,
        "us-central1",
    )
    assert t4["spot_price"] < t4["on_demand_price"]
    assert offers["a3-highgpu-1g"]["on_demand_price"] is None and offers["a3-highgpu-8g"]["on_demand_price"]
