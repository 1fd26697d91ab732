"""From a spec to the Scaleway commercial types and zones a node may be created with, and prices.

Scaleway sells GPU Instances as commercial types ("H100-1-80G": one H100 of 80 GB, "L4-1-24G",
"L40S-1-48G", "H100-2-80G": two), each listed per zone by `GET /products/servers` with its hourly
price (EUR, as Scaleway bills it: Skyward does not convert), its vCPUs, RAM (bytes), GPU count and
`gpu_info` (the card's name and memory). `offer_of` reads a type in a zone as the market's `Offer`;
a launch tries `Rental`s cheapest first, one Scaleway refuses as out of stock falling over to the
next. Scaleway sells no spot GPU Instances: `allocation="spot"` is refused naming the fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from skyward.accelerators import resolve
from skyward.errors import ConfigurationError
from skyward.market.offer import Offer
from skyward.market.rental import Rental, fits, in_order, no_fit, on_demand_only

if TYPE_CHECKING:
    from skyward.spec import Spec

GIB = 1024**3


def card_of(name: str) -> str:
    """The catalog's name of the card a type's `gpu_info.gpu_name` gives ("H100" -> "H100")."""
    try:
        found = resolve(name)
    except ConfigurationError:
        return name
    return found.name if found is not None else name


@attrs.frozen
class ServerType:
    """One commercial type in one zone (its price per server, EUR per hour)."""

    name: str
    zone: str
    card: str
    gpus: int
    gpu_memory_gb: float
    vcpus: int
    memory_gb: float
    price: float

    @classmethod
    def from_api(cls, name: str, zone: str, row: Any) -> ServerType:
        """A type as the SDK reads `GET /products/servers` (a `ServerType`)."""
        info = getattr(row, "gpu_info", None)
        gpus = int(getattr(row, "gpu", 0) or 0)
        return cls(
            name=name,
            zone=zone,
            card=card_of(str(info.gpu_name)) if gpus and info is not None else "",
            gpus=gpus,
            gpu_memory_gb=round(int(info.gpu_memory) / GIB, 1) if gpus and info is not None else 0.0,
            vcpus=int(getattr(row, "ncpus", 0) or 0),
            memory_gb=round(int(getattr(row, "ram", 0) or 0) / GIB, 1),
            price=float(getattr(row, "hourly_price", 0.0) or 0.0),
        )


def offer_of(kind: ServerType, provider: str = "scaleway") -> Offer:
    """The market's record of a type in its zone (on demand only)."""
    return Offer(
        provider=provider,
        instance_type=kind.name,
        accelerator=kind.card or None,
        accelerator_count=kind.gpus,
        accelerator_memory_gb=kind.gpu_memory_gb or None,
        vcpus=kind.vcpus or None,
        memory_gb=kind.memory_gb or None,
        region=kind.zone,
        on_demand_price=kind.price,
    )


def matching(spec: Spec, kinds: Iterable[ServerType]) -> list[ServerType]:
    """The types that carry the spec's accelerator (card, count, memory), vCPUs and memory; a
    `NoOffersError` naming the close cards when none does."""
    kinds = list(kinds)
    found = [
        k
        for k in kinds
        if fits(
            spec,
            cloud="Scaleway",
            card=k.card,
            gpus=k.gpus,
            gpu_memory_gb=k.gpu_memory_gb,
            vcpus=k.vcpus,
            memory_gb=k.memory_gb,
        )
    ]
    if not found:
        raise no_fit(spec, (k.card for k in kinds if k.card), cloud="Scaleway", kind="commercial type")
    return found


def plan(spec: Spec, kinds: Iterable[ServerType]) -> list[Rental]:
    """Every priced fitting type the spec allows, cheapest first (all on demand)."""
    on_demand_only(spec.allocation, "Scaleway")
    offers = []
    for kind in kinds:
        rental = Rental(offer=offer_of(kind), spot=False, ref=kind)
        if kind.price > 0 and (spec.max_hourly_cost is None or rental.price <= spec.max_hourly_cost):
            offers.append(rental)
    return in_order(offers, spec.allocation, spot=lambda o: o.spot, price=lambda o: o.price)
