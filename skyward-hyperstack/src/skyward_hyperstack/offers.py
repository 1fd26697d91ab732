"""Hyperstack's offers for `sky offers` and `sky.offers()`, read from its flavors and pricebook.

A Hyperstack offer is one flavor in one region ("n3-A100x1" in CANADA-1: its GPUs, vCPUs and
memory) at its on-demand price per hour (its GPU count times the pricebook's price per GPU).
Hyperstack sells no spot VMs. The key is `$HYPERSTACK_API_KEY` (or a pool's own, for its config's
source); `$HYPERSTACK_API_URL` points the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

import os

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL
from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus
from skyward_hyperstack.account import API_URL, URL_VARIABLE, locate_api_key, resolve_api_key
from skyward_hyperstack.catalog import offer_of


@attrs.frozen
class HyperstackOffers:
    """Hyperstack's flavors and their prices, for one API key and endpoint."""

    api_key: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None
    name: str = "hyperstack"
    ttl: float = MARKETPLACE_TTL

    @property
    def key(self) -> str:
        return self.api_url or os.environ.get(URL_VARIABLE) or API_URL

    def credentials(self) -> CredentialStatus:
        if self.api_key:
            return CredentialStatus(found=True, where="Hyperstack(api_key=...)")
        return locate_api_key()

    def fetch(self) -> list[Offer]:
        from skyward_hyperstack.api import HyperstackAPI
        from skyward_hyperstack.pricing import priced_flavors

        api_key = resolve_api_key(self.api_key)
        flavors = run_closing(lambda: HyperstackAPI(api_key, self.key), priced_flavors)
        return [offer_of(flavor, self.name) for flavor in flavors]
