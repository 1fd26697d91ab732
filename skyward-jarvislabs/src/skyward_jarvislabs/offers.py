"""JarvisLabs' offers for `sky offers` and `sky.offers()`, and a spec's price for
`Options(selection="cheapest")`, both read from its GPU listing (`GET /misc/server_meta`).

An offer is 1, 2, 4 or 8 GPUs of a type in a region at its on-demand and spot prices per hour;
types without GPUs free right now are listed too (a listing of prices, not of stock). The key is
`$JL_API_KEY` (or a pool's own, for its config's source); `$JL_API_URL` points the source at
another endpoint. The price estimate runs on a short-lived thread with a loop of its own (the
pool asks from inside its event loop); a price it cannot know is None, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.providers.calls import known_or_none, run_closing
from skyward_jarvislabs.account import API_KEY_VARIABLE, API_URL, KEYS_PAGE, URL_VARIABLE, resolve_api_key
from skyward_jarvislabs.catalog import COUNTS, PROVIDER, GpuType, matching, offer_of, plan

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_jarvislabs.api import JarvisAPI
    from skyward_jarvislabs.config import JarvisLabs

#: How long choosing a spec may wait for the listing.
PRICE_TIMEOUT = 15.0


class JarvisOffers(KeyedOffers):
    """JarvisLabs' GPU types and their prices, for one account and endpoint."""

    name = PROVIDER
    cloud = "JarvisLabs"
    default_url = API_URL
    url_variable = URL_VARIABLE
    key_variable = API_KEY_VARIABLE
    key_hint = f"create one at {KEYS_PAGE}"

    def listing(self, api_key: str, url: str) -> list[Offer]:
        from skyward_jarvislabs.api import JarvisAPI

        rows = run_closing(lambda: JarvisAPI(api_key, url), JarvisAPI.server_meta)
        gpus = [GpuType.from_api(row) for row in rows]
        return [offer_of(g, n, g.region) for g in gpus if g.price > 0 for n in COUNTS]


def estimate_hourly_price(config: JarvisLabs, spec: Spec) -> float | None:
    from skyward_jarvislabs.api import LOGGER, JarvisAPI

    async def first(api: JarvisAPI) -> float | None:
        gpus = matching(spec, [GpuType.from_api(r) for r in await api.server_meta()], config.template)
        regions = config.regions or ((spec.region,) if spec.region else ())
        found = plan(spec, gpus, template=config.template, regions=regions)
        return found[0].price if found else None

    return known_or_none(
        lambda: JarvisAPI(resolve_api_key(config.api_key), config.api_url),
        first,
        timeout=PRICE_TIMEOUT,
        thread="jarvislabs-price",
        logger=LOGGER,
        event="skyward.jarvislabs_price_unknown",
    )
