"""What Hyperstack offers for a spec right now: flavors, stock and prices, read together.

`offers` is what the provider tries at each launch (stock changes by the minute) and what
`Hyperstack.hourly_price(spec)` reports the first of. The pool asks the price synchronously while
choosing between specs, from inside its event loop, so `estimate_hourly_price` reads on a
short-lived thread with a loop of its own; it never raises: a price it cannot know is None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.market.rental import Rental
from skyward.providers.calls import first_price
from skyward_hyperstack.account import ACCOUNT
from skyward_hyperstack.api import LOGGER, HyperstackAPI
from skyward_hyperstack.catalog import Flavor, matching, plan

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_hyperstack.config import Hyperstack


async def priced_flavors(api: HyperstackAPI, region: str | None = None) -> list[Flavor]:
    """Every flavor (in `region`, or all), priced from the pricebook."""
    prices = await api.pricebook()
    return [Flavor.from_api(row, prices) for row in await api.flavors(region)]


async def offers(api: HyperstackAPI, spec: Spec, regions: tuple[str, ...]) -> list[Rental]:
    """Every fitting flavor in stock now, cheapest first; a `NoOffersError` naming close GPUs
    when no flavor fits at all."""
    region = regions[0] if len(regions) == 1 else None
    return plan(spec, matching(spec, await priced_flavors(api, region)), regions)


def regions_for(config: Hyperstack, spec: Spec) -> tuple[str, ...]:
    """Where VMs may go: `Hyperstack(region=...)`, else `Spec.region`, else any region."""
    chosen = config.region or spec.region
    return (chosen.upper(),) if chosen else ()


def estimate_hourly_price(config: Hyperstack, spec: Spec) -> float | None:
    return first_price(
        lambda: HyperstackAPI(ACCOUNT.resolve(config.api_key), config.url),
        lambda api: offers(api, spec, regions_for(config, spec)),
        cloud="hyperstack",
        logger=LOGGER,
    )
