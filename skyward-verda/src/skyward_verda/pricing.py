"""What Verda offers for a spec right now: types, availability and prices, read together.

`offers` is what the provider tries at each launch (availability changes by the minute) and what
`Verda.hourly_price(spec)` reports the first of. The pool asks the price synchronously while
choosing between specs, from inside its event loop, so `estimate_hourly_price` reads on a
short-lived thread with a loop of its own; it never raises: a price it cannot know is None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.market.rental import Rental
from skyward.providers.calls import first_price
from skyward_verda.account import resolve_credentials
from skyward_verda.api import LOGGER, VerdaAPI
from skyward_verda.catalog import InstanceType, matching, plan

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_verda.config import Verda

async def instance_types(api: VerdaAPI, spec: Spec) -> list[InstanceType]:
    """The types that fit the spec; a `ProvisionError` naming close types when none does."""
    rows = await api.instance_types()
    return matching(spec, [InstanceType.from_api(r) for r in rows if r.get("instance_type")])


async def offers(
    api: VerdaAPI, spec: Spec, types: list[InstanceType], locations: tuple[str, ...]
) -> list[Rental]:
    """Every offer of `types` that a location can start now, in the order to try them."""
    both = spec.allocation in ("spot-if-available", "cheapest")
    kinds = {True, False} if both else {spec.allocation == "spot"}
    available = {spot: await api.availability(spot) for spot in sorted(kinds)}
    return plan(spec, types, available, locations)


def locations_for(config: Verda, spec: Spec) -> tuple[str, ...]:
    """Where VMs may go: `Verda(locations=...)`, else `Spec.region`, else anywhere."""
    return config.locations or ((spec.region.upper(),) if spec.region else ())


def estimate_hourly_price(config: Verda, spec: Spec) -> float | None:
    async def fitting(api: VerdaAPI) -> list[Rental]:
        return await offers(api, spec, await instance_types(api, spec), locations_for(config, spec))

    return first_price(
        lambda: VerdaAPI(resolve_credentials(config.client_id, config.client_secret), config.url),
        fitting, cloud="verda", logger=LOGGER,
    )
