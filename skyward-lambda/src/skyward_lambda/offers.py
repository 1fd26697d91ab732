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
from skyward_lambda.account import API_KEY_VARIABLE, API_URL, KEYS_PAGE
from skyward_lambda.catalog import offer_of, types_of

URL_VARIABLE = "LAMBDA_API_URL"


class LambdaOffers(KeyedOffers):
    """Lambda's instance types and their prices, for one account and endpoint."""

    name = "lambda"
    cloud = "LambdaCloud"
    default_url = API_URL
    url_variable = URL_VARIABLE
    key_variable = API_KEY_VARIABLE
    key_hint = f"create one at {KEYS_PAGE}"

    def listing(self, api_key: str, url: str) -> list[Offer]:
        from skyward_lambda.api import LambdaAPI

        types = types_of(run_closing(lambda: LambdaAPI(api_key, url), LambdaAPI.instance_types))
        return [offer_of(kind, region, self.name) for kind in types for region in (kind.regions or ("",))]
