"""Novita's offers for `sky offers` and `sky.offers()`, read from its GPU product listing.

A Novita offer is an instance of `count` GPUs (1 to 8) of one product (a GPU model in one
cluster, which stands in the offer's `region`), at the listing's per-GPU prices times the count
(`GET /products`, on demand and spot, the listing a pool creates from); products that cannot be
deployed now are left out. Prices move, so a snapshot is kept an hour.

The key is `$NOVITA_API_KEY` (or a pool's own, for its config's source); `$NOVITA_API_URL`
points the source at another endpoint, as it does the sweeper.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.providers.calls import run_closing
from skyward_novita.account import ACCOUNT
from skyward_novita.catalog import PRICE_UNIT, offer_of

MAX_GPUS = 8


def offers_of(product: dict[str, Any], spot: float | None, provider: str = "novita") -> Iterator[Offer]:
    """A product's offers for 1 to `MAX_GPUS` GPUs (`catalog.offer_of`)."""
    for count in range(1, MAX_GPUS + 1):
        yield offer_of(product, count, spot, provider)


class NovitaOffers(KeyedOffers):
    """Novita's GPU products and their prices, for one account and endpoint."""

    name = "novita"
    account = ACCOUNT

    def listing(self, api_key: str, url: str) -> list[Offer]:
        from skyward_novita.api import NovitaAPI

        async def products(api: NovitaAPI) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            return await api.products(1, spot=False), await api.products(1, spot=True)

        on_demand, spot = run_closing(lambda: NovitaAPI(api_key, url), products)
        spot_prices = {row.get("id"): float(row.get("spotPrice") or 0) / PRICE_UNIT for row in spot}
        return [
            offer
            for row in on_demand
            if row.get("id") and row.get("availableDeploy", True)
            for offer in offers_of(row, spot_prices.get(row["id"]), self.name)
        ]
