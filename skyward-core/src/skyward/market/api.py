"""`sky.offers(...)`, its async twin, and the price a pool reads for a spec: one catalog for both.

    import skyward as sky

    offers = sky.offers(accelerator="A100")            # refreshes what is older than its ttl
    offers.spot().max_price(2.0).cheapest(3)           # the three cheapest spot A100 machines
    offers.order_by("count").first()                   # the most A100s on one machine
    [s.provider for s in offers.errors]                # providers that could not be reached

A pool with several specs and `Options(selection="cheapest")` prices each spec from the same
catalog (`spec_price`): the cheapest offer that fits the spec (`source.fits`), at the price its
allocation pays, within its `max_hourly_cost`. So what `sky offers` shows is what a pool picks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from skyward.market.offer import Offer
from skyward.market.query import OfferQuery
from skyward.market.refresh import SourceStatus, credentials_error, refresh_all, refresh_one
from skyward.market.source import OfferSource, choose, fits, installed_sources
from skyward.market.store import Store

if TYPE_CHECKING:
    from skyward.providers.base import ProviderConfig
    from skyward.spec import Spec


def _on_file(store: Store, source: OfferSource) -> SourceStatus:
    """A source's snapshot as the file has it, without asking the provider."""
    snapshot = store.snapshot(source.name, source.key)
    age = snapshot.age()
    if age is None:
        why = snapshot.error or "never fetched: run `sky offers fetch`, or sky.offers() without refresh=False"
        return SourceStatus(source.name, source.key, "failed", error=why)
    state = "cached" if age < source.ttl else "stale"
    error = snapshot.error if state == "stale" else None
    return SourceStatus(source.name, source.key, state, snapshot.offers, snapshot.fetched_at, error)


def catalog(
    providers: Iterable[str] | None = None, refresh_: bool | None = None, store: Store | None = None
) -> OfferQuery:
    """The catalog of the installed providers whose credentials are found (or those named)."""
    store = store or Store()
    sources = sorted(choose(installed_sources(), providers), key=lambda s: s.name.lower())
    if refresh_ is False:
        statuses = []
        for source in sources:
            reason = credentials_error(source)
            skipped = SourceStatus(source.name, source.key, "skipped", error=reason) if reason else None
            statuses.append(skipped or _on_file(store, source))
    else:
        statuses = refresh_all(store, sources, force=bool(refresh_))
    return OfferQuery(store, tuple(statuses))


def offers(
    *, providers: Iterable[str] | None = None, refresh: bool | None = None, **filters: Any
) -> OfferQuery:
    """Instance offers across providers, as a query (`OfferQuery`) over the on-disk catalog.

    Asks every installed provider whose credentials are found (or only `providers`, by name) for
    its offers when its snapshot is older than its ttl (`refresh=True`: now; `refresh=False`:
    never, the file only). A provider that cannot be reached is reported in `.status` and
    `.errors`, never raised: its last offers are used, marked stale. `filters` are those of
    `OfferQuery.filter`: `accelerator`, `count`, `accelerator_memory`, `vcpus`, `memory`,
    `region`, `provider`, `allocation` ("spot" or "on-demand"), `max_price`.
    """
    return catalog(providers, refresh).filter(**filters)


async def offers_async(
    *, providers: Iterable[str] | None = None, refresh: bool | None = None, **filters: Any
) -> OfferQuery:
    """`offers`, awaited: the providers are asked on threads, so the event loop keeps running."""
    return await asyncio.to_thread(lambda: offers(providers=providers, refresh=refresh, **filters))


@attrs.frozen
class SpecPrice:
    """What the catalog says one node of a spec costs: the offer a pool would rent first and its
    price (None for both when no offer fits within `max_hourly_cost`), and the provider's status."""

    offer: Offer | None
    price: float | None
    status: SourceStatus


def offer_source(config: ProviderConfig) -> OfferSource | None:
    """The config's own source (`ProviderConfig.offer_source()`), or None when it has none."""
    source = config.offer_source()
    return source if isinstance(source, OfferSource) else None


def spec_price(spec: Spec, store: Store | None = None) -> SpecPrice | None:
    """One node's price for `spec` from the catalog (blocking: it may refresh the provider's
    snapshot), or None when the catalog cannot say: the provider has no offer source, or neither a
    snapshot nor a provider that answers. The pool then asks `ProviderConfig.hourly_price`."""
    source = offer_source(spec.provider)
    if source is None:
        return None
    store = store or Store()
    status = refresh_one(store, source, check_credentials=False)
    if not status.usable:
        return None
    query = OfferQuery(store, (status,))
    query = query.accelerator(spec.accelerator.name) if spec.accelerator is not None else query.cpu_only()
    best: tuple[float, Offer] | None = None
    for offer in query.all():
        price = offer.price_for(spec.allocation)
        if price is None or not fits(source, offer, spec):
            continue
        if spec.max_hourly_cost is not None and price > spec.max_hourly_cost:
            continue
        if best is None or price < best[0]:
            best = (price, offer)
    if best is None:
        return SpecPrice(None, None, status)
    return SpecPrice(best[1], best[0], status)
