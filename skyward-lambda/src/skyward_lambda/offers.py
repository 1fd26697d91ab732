"""Lambda's offers for `sky offers` and `sky.offers()`, read from its instance type listing.

A Lambda offer is one instance type (its GPUs, vCPUs and memory) at its on-demand price per hour,
in each region that has capacity for it now (`GET /instance-types`, the listing a pool launches
from); a type sold out everywhere is listed once, without a region, so its price still shows.
Lambda sells no spot machines. Capacity moves, so a snapshot is kept an hour.

The key is `$LAMBDA_API_KEY` (or a pool's own, for its config's source); `$LAMBDA_API_URL`
points the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.providers.calls import run_closing
from skyward_lambda.account import ACCOUNT
from skyward_lambda.catalog import offer_of, types_of


class LambdaOffers(KeyedOffers):
    """Lambda's instance types and their prices, for one account and endpoint."""

    name = "lambda"
    account = ACCOUNT

    def listing(self, api_key: str, url: str) -> list[Offer]:
        from skyward_lambda.api import LambdaAPI

        types = types_of(run_closing(lambda: LambdaAPI(api_key, url), LambdaAPI.instance_types))
        return [offer_of(kind, region, self.name) for kind in types for region in (kind.regions or ("",))]
