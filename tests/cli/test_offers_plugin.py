"""A third-party provider package adds its offers to `sky offers` through the
`skyward_offer_sources` hook, as docs/plugins.md shows: a real distribution on `PYTHONPATH`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cli_support import Sky, no_traceback

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))

from plugin_support import distribution  # noqa: E402

ACME = '''
from skyward.market.offer import Offer
from skyward.providers.credentials import CredentialStatus


class AcmeOffers:
    name = "acme"
    ttl = 3600.0
    key = "https://api.acme.example"

    def credentials(self):
        return CredentialStatus(found=True, where="none needed")

    def fetch(self):
        return [
            Offer(provider="acme", instance_type="gpu-1", accelerator="NVIDIA A100-SXM4-80GB",
                  accelerator_count=1, accelerator_memory_gb=80, vcpus=12, memory_gb=96,
                  region="eu-1", spot_price=0.5, on_demand_price=1.2),
            Offer(provider="acme", instance_type="cpu-4", vcpus=4, memory_gb=16, region="eu-1",
                  on_demand_price=0.1),
        ]


class DownOffers(AcmeOffers):
    name = "acme-down"

    def fetch(self):
        raise ConnectionError("api.acme.example did not answer")


@hookimpl
def skyward_offer_sources():
    return [AcmeOffers(), DownOffers()]
'''


def test_a_third_party_providers_offers_are_listed_beside_one_that_fails(sky: Sky, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    site = distribution(tmp_path / "site", "skyward-acme", ACME)
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    done = sky("offers", "--json", "--accelerator", "A100", PYTHONPATH=path)
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert [(o["provider"], o["instance_type"], o["accelerator"], o["price"]) for o in listing["offers"]] == [
        ("acme", "gpu-1", "A100", 0.5)
    ]
    states = {p["provider"]: (p["state"], p["error"]) for p in listing["providers"]}
    assert states["acme"] == ("fresh", None)
    assert states["acme-down"] == ("failed", "ConnectionError: api.acme.example did not answer")
    table = sky("offers", PYTHONPATH=path)
    assert "acme-down: could not list offers" in table.stderr and no_traceback(table)
    assert "cpu-4" in table.stdout
