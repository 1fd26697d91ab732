"""TensorDock's offers for `sky offers` and `sky.offers()`, and a spec's price for
`Options(selection="cheapest")`, both read from the marketplace's hostnode listing.

An offer is one GPU model on one hostnode, as many of it as `COUNTS` allows within the stock the
hostnode lists now, sized as a pool would deploy it (`catalog`) at the host's prices. The listing
itself is public and read without the pair, but the source counts as configured only where the
pair is (so `sky offers` asks TensorDock only on a machine set up to rent there).
`$TENSORDOCK_API_URL` points the source at another endpoint. The price estimate runs on a
short-lived thread with a loop of its own (the pool asks from inside its event loop); a price it
cannot know is None, never an error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

from skyward.market.offer import Offer
from skyward.market.source import MARKETPLACE_TTL
from skyward.providers.calls import known_or_none, run_closing
from skyward.providers.credentials import CredentialStatus
from skyward_tensordock.account import API_URL, URL_VARIABLE, Credentials, locate_credentials
from skyward_tensordock.catalog import (
    MIN_STORAGE_GB,
    PROVIDER,
    RAM_PER_GPU,
    VCPUS_PER_GPU,
    Hostnode,
    Shape,
    matching_models,
    offer_of,
    plan,
)

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_tensordock.api import TensorDockAPI
    from skyward_tensordock.config import TensorDock

#: How many GPUs of a model one offer rents, where the hostnode has that many free.
COUNTS = (1, 2, 4, 8)
#: How long choosing a spec may wait for the listing.
PRICE_TIMEOUT = 15.0
#: The hostnode listing needs no credential: the client is built with none.
_PUBLIC = Credentials("", "")


def _api(url: str) -> TensorDockAPI:
    from skyward_tensordock.api import TensorDockAPI

    return TensorDockAPI(_PUBLIC, url)


def _hostnodes(listing: dict[str, dict[str, object]]) -> list[Hostnode]:
    return [Hostnode.from_api(uuid, row) for uuid, row in listing.items()]


@attrs.frozen
class TensorDockOffers:
    """The marketplace's GPUs and their prices, at one endpoint."""

    api_key: str | None = attrs.field(default=None, repr=False)
    api_token: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None
    name: str = PROVIDER
    ttl: float = MARKETPLACE_TTL

    @property
    def key(self) -> str:
        return self.api_url or os.environ.get(URL_VARIABLE) or API_URL

    def credentials(self) -> CredentialStatus:
        return locate_credentials(self.api_key, self.api_token)

    def fetch(self) -> list[Offer]:
        from skyward_tensordock.api import TensorDockAPI

        listing = run_closing(lambda: _api(self.key), TensorDockAPI.hostnodes)
        return [
            offer_of(Shape(h, model, n, VCPUS_PER_GPU * n, RAM_PER_GPU * n, MIN_STORAGE_GB))
            for h in _hostnodes(listing)
            if h.online
            for model, (stock, _) in h.gpus.items()
            for n in COUNTS
            if n <= stock
        ]


def estimate_hourly_price(config: TensorDock, spec: Spec) -> float | None:
    from skyward_tensordock.api import LOGGER

    async def first(api: TensorDockAPI) -> float | None:
        hostnodes = _hostnodes(await api.hostnodes())
        models = matching_models(spec, hostnodes, config.storage_gb)
        regions = config.regions or ((spec.region,) if spec.region else ())
        found = plan(spec, hostnodes, models=models, storage_gb=config.storage_gb, regions=regions)
        return found[0].price if found else None

    return known_or_none(
        lambda: _api(config.url),
        first,
        timeout=PRICE_TIMEOUT,
        thread="tensordock-price",
        logger=LOGGER,
        event="skyward.tensordock_price_unknown",
    )
