"""Vultr's offers for `sky offers` and `sky.offers()`, read from its Cloud GPU plan listing.

A Vultr offer is one plan (its GPUs, vCPUs and memory) in one region that can deploy it now, at
its on-demand price per hour (`GET /plans?type=vcg`, the listing a pool creates from); Vultr sells
no spot instances. Plans with a slice of a card are left out, as pools never rent them.

The key is `$VULTR_API_KEY` (or a pool's own, for its config's source); `$VULTR_API_URL` points
the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.providers.calls import run_closing
from skyward_vultr.account import ACCOUNT
from skyward_vultr.catalog import Plan, offer_of


class VultrOffers(KeyedOffers):
    """Vultr's Cloud GPU plans and their prices, for one key and endpoint."""

    name = "vultr"
    account = ACCOUNT

    def listing(self, api_key: str, url: str) -> list[Offer]:
        from skyward_vultr.api import VultrAPI

        rows = run_closing(lambda: VultrAPI(api_key, url), VultrAPI.plans)
        plans = [Plan.from_api(r) for r in rows if r.get("id")]
        return [offer_of(p, region, self.name) for p in plans if p.whole and p.gpus for region in p.regions]
