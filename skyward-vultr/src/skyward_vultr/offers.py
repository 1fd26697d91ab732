"""Vultr's offers for `sky offers` and `sky.offers()`, read from its Cloud GPU plan listing.

A Vultr offer is one plan (its GPUs, vCPUs and memory) in one region that can deploy it now, at
its on-demand price per hour (`GET /plans?type=vcg`, the listing a pool creates from); Vultr sells
no spot instances. Plans with a slice of a card are left out, as pools never rent them.

The key is `$VULTR_API_KEY` (or a pool's own, for its config's source); `$VULTR_API_URL` points
the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

import os

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL
from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus
from skyward_vultr.account import API_URL, URL_VARIABLE, locate_api_key, resolve_api_key
from skyward_vultr.catalog import Plan, offer_of


@attrs.frozen
class VultrOffers:
    """Vultr's Cloud GPU plans and their prices, for one key and endpoint."""

    api_key: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None
    name: str = "vultr"
    ttl: float = MARKETPLACE_TTL

    @property
    def key(self) -> str:
        return self.api_url or os.environ.get(URL_VARIABLE) or API_URL

    def credentials(self) -> CredentialStatus:
        if self.api_key:
            return CredentialStatus(found=True, where="Vultr(api_key=...)")
        return locate_api_key()

    def fetch(self) -> list[Offer]:
        from skyward_vultr.api import VultrAPI

        api_key = resolve_api_key(self.api_key)
        rows = run_closing(lambda: VultrAPI(api_key, self.key), VultrAPI.plans)
        plans = [Plan.from_api(r) for r in rows if r.get("id")]
        return [offer_of(p, region, self.name) for p in plans if p.whole and p.gpus for region in p.regions]
