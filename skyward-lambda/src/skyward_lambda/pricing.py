"""What Lambda offers for a spec right now: types and the regions with capacity, read together.

`offers` is what the provider tries at each launch (capacity changes by the minute) and what
`LambdaCloud.hourly_price(spec)` reports the first of, read on a short-lived thread with its own
loop (the pool asks from inside its event loop); a price it cannot know is None, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.market.rental import Rental
from skyward.providers.calls import first_price
from skyward_lambda.account import ACCOUNT
from skyward_lambda.api import LOGGER, LambdaAPI
from skyward_lambda.catalog import InstanceType, matching, plan, types_of

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_lambda.config import LambdaCloud


async def fitting(api: LambdaAPI, spec: Spec) -> list[InstanceType]:
    """The types that fit the spec, with their regions' capacity as listed now; a
    `NoOffersError` naming what Lambda has when none does."""
    return matching(spec, types_of(await api.instance_types()))


async def offers(api: LambdaAPI, spec: Spec, regions: tuple[str, ...]) -> list[Rental]:
    """Every (type, region) that fits and has capacity now, cheapest first."""
    return plan(spec, await fitting(api, spec), regions)


def regions_for(config: LambdaCloud, spec: Spec) -> tuple[str, ...]:
    """Where VMs may go: `LambdaCloud(region=...)`, else `Spec.region`, else anywhere."""
    region = config.region or spec.region
    return (region.lower(),) if region else ()


def estimate_hourly_price(config: LambdaCloud, spec: Spec) -> float | None:
    return first_price(
        lambda: LambdaAPI(ACCOUNT.resolve(config.api_key), config.url),
        lambda api: offers(api, spec, regions_for(config, spec)),
        cloud="lambda",
        logger=LOGGER,
    )
