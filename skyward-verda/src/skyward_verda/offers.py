"""Verda's offers for `sky offers` and `sky.offers()`, read from its instance type listing.

A Verda offer is one instance type ("1A100.22V": its GPUs, vCPUs and memory) at its on-demand
and spot prices per hour (`GET /instance-types`, the listing a pool deploys from). The listing
prices by type, not by location, so an offer names no region; which location can start a type
right now is read when a pool launches. Spot prices move, so a snapshot is kept an hour.

The credentials are `$VERDA_CLIENT_ID` / `$VERDA_CLIENT_SECRET` (or a pool's own, for its
config's source); `$VERDA_API_URL` points the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

import os

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL
from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus
from skyward_verda.account import API_URL, locate_credentials, resolve_credentials
from skyward_verda.catalog import InstanceType, offer_of

URL_VARIABLE = "VERDA_API_URL"


@attrs.frozen
class VerdaOffers:
    """Verda's instance types and their prices, for one account and endpoint."""

    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None
    name: str = "verda"
    ttl: float = MARKETPLACE_TTL

    @property
    def key(self) -> str:
        return self.api_url or os.environ.get(URL_VARIABLE) or API_URL

    def credentials(self) -> CredentialStatus:
        if self.client_id and self.client_secret:
            return CredentialStatus(found=True, where="Verda(client_id=..., client_secret=...)")
        return locate_credentials()

    def fetch(self) -> list[Offer]:
        from skyward_verda.api import VerdaAPI

        credentials = resolve_credentials(self.client_id, self.client_secret)

        rows = run_closing(lambda: VerdaAPI(credentials, self.key), VerdaAPI.instance_types)
        return [offer_of(InstanceType.from_api(r), self.name) for r in rows if r.get("instance_type")]
