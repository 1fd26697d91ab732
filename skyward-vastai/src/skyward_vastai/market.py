"""Offers: what the spec asks of a Vast machine, the search, and the order offers are tried in.

A Vast *offer* is one machine's free GPUs at a price; renting it makes an *instance*. On-demand
offers are rented at their price; interruptible ones are bid for (`type=bid`, `price=min_bid`)
and may be stopped when outbid. `Spec.allocation` decides which kinds are searched and in what
order: "spot" bids only, "on-demand" never bids, "spot-if-available" tries every bid before any
on-demand offer, "cheapest" takes both kinds by price.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from skyward.errors import NoOffersError
from skyward.market.offer import Offer
from skyward.market.rental import Rental, in_order
from skyward_vastai.account import resolve_api_key
from skyward_vastai.api import VastAPI
from skyward_vastai.gpus import gpu_count, gpu_names, min_gpu_ram_mb

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward_vastai.config import VastAI

#: How many offers one search returns (cheapest first): plenty to retry taken ones with.
SEARCH_LIMIT = 64
#: Search kinds per allocation, in the order their offers are tried.
KINDS = {
    "spot": ("bid",),
    "on-demand": ("on-demand",),
    "spot-if-available": ("bid", "on-demand"),
    "cheapest": ("bid", "on-demand"),
}


@attrs.frozen
class Ask:
    """What renting a Vast offer needs: the offer's id, its machine (a pool uses each machine once)
    and, for an interruptible one, the bid."""

    id: int
    machine_id: int
    bid: float | None = None


def offer_of(row: dict[str, Any], kind: str, provider: str = "vastai") -> Offer:
    """The market's record of one search row (`kind` "bid": priced at its minimum bid, as spot)."""
    price = float(row.get("dph_total") or 0.0)
    spot = kind == "bid"
    gpus = int(row.get("num_gpus") or 0)
    name = str(row.get("gpu_name") or "")
    return Offer(
        provider=provider, instance_type=f"{gpus}x {name}" if gpus else name or "cpu",
        accelerator=name or None, accelerator_count=gpus,
        vcpus=float(row.get("cpu_cores_effective") or row.get("cpu_cores") or 0.0) or None,
        memory_gb=round(float(row.get("cpu_ram") or 0.0) / 1000, 1) or None,
        region=str(row.get("geolocation") or ""),
        spot_price=float(row.get("min_bid") or price) if spot else None,
        on_demand_price=None if spot else price,
    )


def rental_of(row: dict[str, Any], kind: str) -> Rental:
    """A search row as a launch tries it."""
    offer = offer_of(row, kind)
    bid = offer.spot_price if kind == "bid" else None
    ask = Ask(id=int(row["id"]), machine_id=int(row.get("machine_id") or row["id"]), bid=bid)
    return Rental(offer=offer, spot=kind == "bid", ref=ask)


@attrs.frozen
class SearchFilters:
    """The search filters for one spec (Vast's REST units: memory in MB, disk in GB)."""

    filters: dict[str, Any] = attrs.field(hash=False)
    kinds: tuple[str, ...]
    disk_gb: float
    max_price: float | None
    summary: str

    @classmethod
    def for_spec(cls, spec: Spec, config: VastAI) -> SearchFilters:
        filters: dict[str, Any] = {
            "rentable": {"eq": True}, "rented": {"eq": False}, "external": {"eq": False},
            "reliability": {"gte": config.min_reliability},
        }
        said = [spec.allocation]
        if config.verified:
            filters["verified"] = {"eq": True}
        acc = spec.accelerator
        if acc is not None:
            names = gpu_names(acc)
            filters["gpu_name"] = {"eq": names[0]} if len(names) == 1 else {"in": list(names)}
            filters["num_gpus"] = {"eq": gpu_count(acc)}
            said.append(f"{gpu_count(acc)}x {' or '.join(names)}")
            ram = min_gpu_ram_mb(acc)
            if ram:
                filters["gpu_ram"] = {"gte": ram}
                said.append(f">= {acc.memory} per GPU")
        if spec.vcpus:
            filters["cpu_cores_effective"] = {"gte": float(spec.vcpus)}
            said.append(f">= {spec.vcpus:g} vCPUs")
        if spec.memory_gb:
            filters["cpu_ram"] = {"gte": float(spec.memory_gb) * 1000}
            said.append(f">= {spec.memory_gb:g} GB RAM")
        disk = float(spec.disk_gb or config.disk_gb)
        filters["disk_space"] = {"gte": disk}
        said.append(f">= {disk:g} GB disk")
        places = (spec.region.upper(),) if spec.region else config.geolocation
        if places:
            filters["geolocation"] = {"in": list(places)}
            said.append(f"in {', '.join(places)}")
        if spec.max_hourly_cost:
            filters["dph_total"] = {"lte": float(spec.max_hourly_cost)}
            said.append(f"<= ${spec.max_hourly_cost:g}/h")
        said.append(f"reliability >= {config.min_reliability:g}")
        if config.verified:
            said.append("verified hosts")
        return cls(filters, KINDS[spec.allocation], disk, spec.max_hourly_cost, ", ".join(said))


async def search(api: VastAPI, query: SearchFilters, allocation: str) -> list[Rental]:
    """Every matching offer, in the order to try them (see the module)."""
    found: list[Rental] = []
    for kind in query.kinds:
        rows = await api.search(query.filters, kind, query.disk_gb, SEARCH_LIMIT)
        found += [rental_of(row, kind) for row in rows]
    return ordered(found, query, allocation)


def ordered(offers: list[Rental], query: SearchFilters, allocation: str) -> list[Rental]:
    """Drop offers over the price cap (a bid is priced at what we bid), then order them."""
    offers = [o for o in offers if query.max_price is None or o.price <= query.max_price]
    return in_order(offers, allocation, spot=lambda o: o.spot, price=lambda o: o.price)


def describe_none(query: SearchFilters) -> NoOffersError:
    """No offer matches: `NoOffersError` (a `ProvisionError`), saying what to relax."""
    return NoOffersError(
        f"vastai: no offer matches {query.summary}; relax the spec (another accelerator, fewer "
        "vCPUs or less memory, a higher max_hourly_cost, no region) or VastAI(min_reliability=..., "
        "verified=False)"
    )


def cheapest_price(config: VastAI, spec: Spec) -> float | None:
    """`VastAI.hourly_price`: the cheapest matching offer's $/hour, None when unknown."""
    try:
        query = SearchFilters.for_spec(spec, config)
        api = VastAPI(resolve_api_key(config.api_key), config.api_url)
        prices = [
            rental_of(row, kind).price
            for kind in query.kinds
            for row in api.search_now(query.filters, kind, query.disk_gb, 8)
        ]
    except Exception:  # noqa: BLE001 - a price is a hint; the pool's start reports real failures
        return None
    prices = [p for p in prices if query.max_price is None or p <= query.max_price]
    return min(prices) if prices else None
