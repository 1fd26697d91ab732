"""What Verda offers for a spec right now: types, availability and prices, read together.

`offers` is what the provider tries at each launch (availability changes by the minute) and what
`Verda.hourly_price(spec)` reports the first of. The pool asks the price synchronously while
choosing between specs, from inside its event loop, so `estimate_hourly_price` reads on a
short-lived thread with a loop of its own; it never raises: a price it cannot know is None.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING

import structlog

from skyward_verda.account import resolve_credentials
from skyward_verda.api import LOGGER, VerdaAPI
from skyward_verda.catalog import InstanceType, Offer, matching, plan

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_verda.config import Verda

#: How long choosing a spec may wait for Verda's listing.
PRICE_TIMEOUT = 15.0


async def instance_types(api: VerdaAPI, spec: Spec) -> list[InstanceType]:
    """The types that fit the spec; a `ProvisionError` naming close types when none does."""
    rows = await api.instance_types()
    return matching(spec, [InstanceType.from_api(r) for r in rows if r.get("instance_type")])


async def offers(
    api: VerdaAPI, spec: Spec, types: list[InstanceType], locations: tuple[str, ...]
) -> list[Offer]:
    """Every offer of `types` that a location can start now, in the order to try them."""
    both = spec.allocation in ("spot-if-available", "cheapest")
    kinds = {True, False} if both else {spec.allocation == "spot"}
    available = {spot: await api.availability(spot) for spot in sorted(kinds)}
    return plan(spec, types, available, locations)


async def _estimate(config: Verda, spec: Spec) -> float | None:
    api = VerdaAPI(resolve_credentials(config.client_id, config.client_secret), config.url)
    try:
        found = await offers(api, spec, await instance_types(api, spec), locations_for(config, spec))
        return found[0].price if found else None
    finally:
        await api.close()


def locations_for(config: Verda, spec: Spec) -> tuple[str, ...]:
    """Where VMs may go: `Verda(locations=...)`, else `Spec.region`, else anywhere."""
    return config.locations or ((spec.region.upper(),) if spec.region else ())


def estimate_hourly_price(config: Verda, spec: Spec) -> float | None:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="verda-price")
    try:
        return pool.submit(asyncio.run, _estimate(config, spec)).result(timeout=PRICE_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - unknown price; the launch reports the real error
        structlog.get_logger(LOGGER).info("skyward.verda_price_unknown", error=str(exc))
        return None
    finally:
        pool.shutdown(wait=False)
