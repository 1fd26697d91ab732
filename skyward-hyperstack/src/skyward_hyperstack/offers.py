"""Hyperstack's offers for `sky offers` and `sky.offers()`, read from its flavors and pricebook.

A Hyperstack offer is one flavor in one region ("n3-A100x1" in CANADA-1: its GPUs, vCPUs and
memory) at its on-demand price per hour (its GPU count times the pricebook's price per GPU).
Hyperstack sells no spot VMs. The key is `$HYPERSTACK_API_KEY` (or a pool's own, for its config's
source); `$HYPERSTACK_API_URL` points the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.providers.calls import run_closing
from skyward_hyperstack.account import ACCOUNT
from skyward_hyperstack.catalog import offer_of


class HyperstackOffers(KeyedOffers):
    """Hyperstack's flavors and their prices, for one API key and endpoint."""

    name = "hyperstack"
    account = ACCOUNT

    def listing(self, api_key: str, url: str) -> list[Offer]:
        from skyward_hyperstack.api import HyperstackAPI
        from skyward_hyperstack.pricing import priced_flavors

        flavors = run_closing(lambda: HyperstackAPI(api_key, url), priced_flavors)
        return [offer_of(flavor, self.name) for flavor in flavors]
