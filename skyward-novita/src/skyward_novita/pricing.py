"""What Novita offers for a spec right now, read from its product listing.

`offers` is what the provider tries at each launch (availability changes by the minute) and what
`Novita.hourly_price(spec)` reports the first of, read on a short-lived thread with its own loop
(the pool asks from inside its event loop); a price it cannot know is None, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.errors import ConfigurationError
from skyward.market.rental import SPOT_KINDS, Rental, whole_gpus
from skyward.providers.calls import first_price
from skyward_novita.account import ACCOUNT
from skyward_novita.api import LOGGER, NovitaAPI
from skyward_novita.catalog import fits, no_product, plan

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_novita.config import Novita

def gpu_count(spec: Spec) -> int:
    if spec.accelerator is None:
        raise ConfigurationError(
            "Novita runs GPU instances: give the pool an accelerator (accelerator=\"RTX_4090\")"
        )
    return whole_gpus(spec.accelerator.count, "Novita")


async def offers(api: NovitaAPI, spec: Spec, *, strict: bool = False) -> list[Rental]:
    """The offers Novita can start now, in order; with `strict`, no product carrying the
    accelerator at all is a `ProvisionError` naming what Novita has."""
    gpus = gpu_count(spec)
    products = {spot: await api.products(gpus, spot) for spot in SPOT_KINDS[spec.allocation]}
    if strict:
        assert spec.accelerator is not None
        names = [str(r.get("name")) for rows in products.values() for r in rows]
        if not any(fits(name, spec.accelerator) for name in names):
            raise no_product(spec, names)
    return plan(spec, products, gpus)


def estimate_hourly_price(config: Novita, spec: Spec) -> float | None:
    return first_price(
        lambda: NovitaAPI(ACCOUNT.resolve(config.api_key), config.url),
        lambda api: offers(api, spec),
        cloud="novita",
        logger=LOGGER,
    )
