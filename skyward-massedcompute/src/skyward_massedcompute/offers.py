"""Massed Compute's offers for `sky offers` and `sky.offers()`, and a spec's price for
`Options(selection="cheapest")`, both read from its GPU inventory.

An offer is one product ("gpu_1x_l40": its GPUs, vCPUs and memory) at its on-demand price per
hour; products without capacity right now are listed too (a listing of prices, not of stock),
with no region: where one is free is read when a pool launches. The key is `$MASSED_API_KEY` (or
a pool's own, for its config's source); `$MASSED_API_URL` points the source at another endpoint.
The price estimate runs on a short-lived thread with a loop of its own (the pool asks from
inside its event loop); a price it cannot know is None, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.providers.calls import first_price, run_closing
from skyward_massedcompute.account import ACCOUNT
from skyward_massedcompute.catalog import PROVIDER, Product, matching, offer_of, plan

if TYPE_CHECKING:
    from skyward.market.rental import Rental
    from skyward.spec import Spec
    from skyward_massedcompute.api import MassedAPI
    from skyward_massedcompute.config import MassedCompute


class MassedOffers(KeyedOffers):
    """Massed Compute's products and their prices, for one account and endpoint."""

    name = PROVIDER
    account = ACCOUNT

    def listing(self, api_key: str, url: str) -> list[Offer]:
        from skyward_massedcompute.api import MassedAPI

        inventory = run_closing(lambda: MassedAPI(api_key, url), MassedAPI.inventory)
        return [offer_of(Product.from_api(name, row)) for name, row in inventory.items()]


def estimate_hourly_price(config: MassedCompute, spec: Spec) -> float | None:
    from skyward_massedcompute.api import LOGGER, MassedAPI

    async def offers(api: MassedAPI) -> list[Rental]:
        products = matching(spec, [Product.from_api(n, r) for n, r in (await api.inventory()).items()])
        return plan(spec, products, config.regions or ((spec.region,) if spec.region else ()))

    return first_price(
        lambda: MassedAPI(ACCOUNT.resolve(config.api_key), config.url),
        offers,
        cloud="massedcompute",
        logger=LOGGER,
    )
