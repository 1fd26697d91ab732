"""What Scaleway offers: its GPU commercial types per zone with their prices, for a launch, for
`Scaleway.hourly_price(spec)`, and for `sky offers` / `sky.offers()`.

A Scaleway offer is one commercial type in one zone at its hourly price (EUR; `GET
/products/servers`, the listing a pool creates from); Scaleway sells no spot GPU Instances. `sky
offers` reads the config's zones (`$SCW_DEFAULT_ZONE`, else every GPU zone, without a config) with
the environment's credentials; `$SCW_API_URL` points it at another endpoint, as it does the sweeper.
`estimate_hourly_price` reads on a short-lived thread with a loop of its own (the pool asks while
choosing between specs, from inside its loop); it never raises: a price it cannot know is None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from skyward.market.source import MARKETPLACE_TTL
from skyward.providers.calls import known_or_none, run_closing
from skyward_scaleway.account import api_url, locate, resolve, zones
from skyward_scaleway.api import LOGGER, ScalewayAPI
from skyward_scaleway.catalog import ServerType, matching, offer_of, plan

if TYPE_CHECKING:
    from skyward.market.offer import Offer
    from skyward.market.rental import Rental
    from skyward.providers.credentials import CredentialStatus
    from skyward.spec import Spec
    from skyward_scaleway.config import Scaleway

#: How long choosing a spec may wait for Scaleway's listing.
PRICE_TIMEOUT = 15.0


async def listed(api: ScalewayAPI, zones: tuple[str, ...]) -> list[ServerType]:
    """Every GPU type of every zone (or every type, for the CPU ones too: `gpus == 0`)."""
    found: list[ServerType] = []
    for zone in zones:
        rows = await api.server_types(zone)
        found += [ServerType.from_api(name, zone, row) for name, row in sorted(rows.items())]
    return found


async def types_for(api: ScalewayAPI, spec: Spec, zones: tuple[str, ...]) -> list[ServerType]:
    """The types that fit the spec in the zones allowed; `NoOffersError` naming close cards."""
    return matching(spec, await listed(api, zones))


async def rentals(api: ScalewayAPI, spec: Spec, zones: tuple[str, ...]) -> list[Rental]:
    """Every fitting type in every zone allowed, in the order to try them."""
    return plan(spec, await types_for(api, spec, zones))


def open_api(config: Scaleway | None) -> ScalewayAPI:
    """A client with the config's credentials (else the environment's and the CLI profile's)."""
    if config is None:
        return ScalewayAPI(resolve(None, None, None), api_url())
    return ScalewayAPI(resolve(config.access_key, config.secret_key, config.project_id), config.url)


def estimate_hourly_price(config: Scaleway, spec: Spec) -> float | None:
    async def first(api: ScalewayAPI) -> float | None:
        found = await rentals(api, spec, config.zones_for(spec))
        return found[0].price if found else None

    return known_or_none(
        lambda: open_api(config),
        first,
        timeout=PRICE_TIMEOUT,
        thread="scaleway-price",
        logger=LOGGER,
        event="skyward.scaleway_price_unknown",
    )


@attrs.frozen
class ScalewayOffers:
    """Scaleway's GPU types and prices for one config (None: the environment's) and its zones."""

    config: Scaleway | None = None
    name: str = "scaleway"
    ttl: float = MARKETPLACE_TTL

    @property
    def key(self) -> str:
        url = self.config.url if self.config is not None else api_url()
        return f"{url}|{','.join(self._zones())}"

    def _zones(self) -> tuple[str, ...]:
        return self.config.zone if self.config is not None and self.config.zone else zones()

    def credentials(self) -> CredentialStatus:
        from skyward.providers.credentials import CredentialStatus

        if self.config is not None and self.config.secret_key:
            return CredentialStatus(found=True, where="Scaleway(secret_key=...)")
        return locate()

    def fetch(self) -> list[Offer]:
        async def read(api: ScalewayAPI) -> list[ServerType]:
            return await listed(api, self._zones())

        kinds = run_closing(lambda: open_api(self.config), read)
        return [offer_of(k, self.name) for k in kinds if k.gpus and k.card]
