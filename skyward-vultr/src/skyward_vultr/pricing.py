"""What Vultr offers for a spec right now: its plans, the regions that can deploy them, prices.

`offers` is what the provider tries at each launch (a plan's regions change as stock does) and
what `Vultr.hourly_price(spec)` reports the first of. The pool asks the price synchronously while
choosing between specs, from inside its event loop, so `estimate_hourly_price` reads on a
short-lived thread with a loop of its own; it never raises: a price it cannot know is None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.market.rental import Rental
from skyward.providers.calls import first_price
from skyward_vultr.account import ACCOUNT
from skyward_vultr.api import LOGGER, VultrAPI
from skyward_vultr.catalog import Plan, matching, plan

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_vultr.config import Vultr


async def plans_for(api: VultrAPI, spec: Spec) -> list[Plan]:
    """The plans that fit the spec (Cloud GPU plans, or regular ones for a CPU spec); a
    `NoOffersError` naming close cards when none does."""
    rows = await api.plans("vcg" if spec.accelerator is not None else "vc2")
    return matching(spec, [Plan.from_api(r) for r in rows if r.get("id")])


async def offers(api: VultrAPI, spec: Spec, regions: tuple[str, ...]) -> list[Rental]:
    """Every fitting plan in every region that can deploy it now, in the order to try them."""
    return plan(spec, await plans_for(api, spec), regions)


def regions_for(config: Vultr, spec: Spec) -> tuple[str, ...]:
    """Where instances may go: `Vultr(region=...)`, else `Spec.region`, else anywhere."""
    return config.region or ((spec.region.lower(),) if spec.region else ())


def estimate_hourly_price(config: Vultr, spec: Spec) -> float | None:
    return first_price(
        lambda: VultrAPI(ACCOUNT.resolve(config.api_key), config.url),
        lambda api: offers(api, spec, regions_for(config, spec)),
        cloud="vultr",
        logger=LOGGER,
    )
