"""Lambda's offers for `sky offers` and `sky.offers()`, read from its instance type listing.

A Lambda offer is one instance type (its GPUs, vCPUs and memory) at its on-demand price per hour,
in each region that has capacity for it now (`GET /instance-types`, the listing a pool launches
from); a type sold out everywhere is listed once, without a region, so its price still shows.
Lambda sells no spot machines. Capacity moves, so a snapshot is kept an hour.

The key is `$LAMBDA_API_KEY` (or a pool's own, for its config's source); `$LAMBDA_API_URL`
points the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

import os

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL
from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus
from skyward_lambda.account import API_URL, locate_api_key, resolve_api_key
from skyward_lambda.catalog import offer_of, types_of

URL_VARIABLE = "LAMBDA_API_URL"


@attrs.frozen
class LambdaOffers:
    """Lambda's instance types and their prices, for one account and endpoint."""

    api_key: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None
    name: str = "lambda"
    ttl: float = MARKETPLACE_TTL

    @property
    def key(self) -> str:
        return self.api_url or os.environ.get(URL_VARIABLE) or API_URL

    def credentials(self) -> CredentialStatus:
        if self.api_key:
            return CredentialStatus(found=True, where="LambdaCloud(api_key=...)")
        return locate_api_key()

    def fetch(self) -> list[Offer]:
        from skyward_lambda.api import LambdaAPI

        api_key = resolve_api_key(self.api_key)
        listing = run_closing(lambda: LambdaAPI(api_key, self.key), LambdaAPI.instance_types)
        return [
            offer_of(kind, region, self.name)
            for kind in types_of(listing)
            for region in (kind.regions or ("",))
        ]
