"""From a spec to the Lambda instance types and regions a node may be launched with.

Lambda sells fixed shapes ("gpu_1x_a100_sxm4": one A100 40 GB, 30 vCPUs, 200 GiB) at one
on-demand price each (`price_cents_per_hour`); it sells no spot machines. `GET /instance-types`
lists every type with the regions that can start one right now. `offer_of` reads a type as the
market's `Offer` (in one region, or none for `sky offers`' sold-out types); a launch tries
`Rental`s, a type in a region with capacity, in price order (`plan`), so launching is "try each
in turn": one that Lambda refuses for capacity falls over to the next.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from skyward.errors import NoOffersError
from skyward.market.offer import Offer
from skyward.market.rental import (
    Rental,
    in_order,
    memory_fits,
    names_card,
    number,
    on_demand_only,
    whole_gpus,
)

if TYPE_CHECKING:
    from skyward.spec import Spec

#: "A100 (40 GB SXM4)": the card, then its memory in the brackets.
_CARD = re.compile(r"^\s*(?P<card>[^(]+?)\s*(?:\((?P<gb>\d+(?:\.\d+)?)\s*GB[^)]*\))?\s*$", re.IGNORECASE)


@attrs.frozen
class InstanceType:
    """One entry of `GET /instance-types` (price per instance per hour, USD)."""

    name: str
    description: str
    card: str
    gpu_memory_gb: float | None
    gpus: int
    vcpus: int
    memory_gb: float
    price: float
    regions: tuple[str, ...]

    @classmethod
    def from_api(cls, entry: dict[str, Any]) -> InstanceType:
        kind = entry.get("instance_type") if isinstance(entry.get("instance_type"), dict) else {}
        specs = kind.get("specs") if isinstance(kind.get("specs"), dict) else {}
        gpus = int(number(specs.get("gpus")))
        found = _CARD.match(str(kind.get("gpu_description") or "")) if gpus else None
        regions = entry.get("regions_with_capacity_available") or []
        return cls(
            name=str(kind["name"]),
            description=str(kind.get("description") or ""),
            card=found["card"] if found else "",
            gpu_memory_gb=float(found["gb"]) if found and found["gb"] else None,
            gpus=gpus,
            vcpus=int(number(specs.get("vcpus"))),
            memory_gb=number(specs.get("memory_gib")),
            price=number(kind.get("price_cents_per_hour")) / 100,
            regions=tuple(str(r.get("name")) for r in regions if isinstance(r, dict) and r.get("name")),
        )


def types_of(listing: dict[str, dict[str, Any]]) -> list[InstanceType]:
    """The listing's entries as `InstanceType`s (entries without a name left out)."""
    return [
        InstanceType.from_api(entry)
        for entry in listing.values()
        if isinstance(entry.get("instance_type"), dict) and entry["instance_type"].get("name")
    ]


def offer_of(kind: InstanceType, region: str = "", provider: str = "lambda") -> Offer:
    """The market's record of an instance type (in `region`, where one is known)."""
    return Offer(
        provider=provider,
        instance_type=kind.name,
        accelerator=kind.card or None,
        accelerator_count=kind.gpus,
        accelerator_memory_gb=kind.gpu_memory_gb,
        vcpus=kind.vcpus or None,
        memory_gb=kind.memory_gb or None,
        region=region,
        on_demand_price=kind.price or None,
    )


def matching(spec: Spec, types: Iterable[InstanceType]) -> list[InstanceType]:
    """The types that carry the spec's accelerator (count, memory) and its vCPUs and memory."""
    on_demand_only(spec.allocation, "Lambda Cloud")
    listed = list(types)
    found = []
    for kind in listed:
        acc = spec.accelerator
        if acc is None:
            fits = not kind.gpus
        else:
            fits = kind.gpus == whole_gpus(acc.count, "Lambda Cloud") and names_card(kind.card, acc.name)
            fits = fits and memory_fits(kind.gpu_memory_gb, acc.memory_gb)
        if (
            fits
            and not (spec.vcpus and kind.vcpus < spec.vcpus)
            and not (spec.memory_gb and kind.memory_gb < spec.memory_gb)
        ):
            found.append(kind)
    if not found:
        raise _no_type(spec, listed)
    return found


def _no_type(spec: Spec, types: list[InstanceType]) -> NoOffersError:
    """No instance type fits: `NoOffersError` (a `ProvisionError`), naming the closest types."""
    acc = spec.accelerator
    memory = f" ({acc.memory_gb:g} GB)" if acc is not None and acc.memory_gb else ""
    wanted = "no GPU" if acc is None else f"{acc.count:g}x {acc.name}{memory}"
    names = sorted({f"{t.gpus}x {t.card} ({t.gpu_memory_gb or 0:g} GB)" for t in types if t.card})
    close = difflib.get_close_matches(acc.name if acc else "CPU", names, n=4, cutoff=0.2)
    return NoOffersError(
        f"Lambda Cloud has no instance type with {wanted}"
        + (f" and >= {spec.vcpus:g} vCPUs" if spec.vcpus else "")
        + (f" and >= {spec.memory_gb:g} GB RAM" if spec.memory_gb else "")
        + f"; it has: {', '.join(close or names[:6]) or 'none'}"
    )


def plan(spec: Spec, types: Iterable[InstanceType], regions: tuple[str, ...] = ()) -> list[Rental]:
    """Every (type, region with capacity now) the spec allows, cheapest first."""
    offers = []
    for kind in types:
        for region in kind.regions:
            if (regions and region not in regions) or kind.price <= 0:
                continue
            offer = Rental(offer=offer_of(kind, region), spot=False, ref=kind)
            if spec.max_hourly_cost is None or offer.price <= spec.max_hourly_cost:
                offers.append(offer)
    return in_order(offers, "on-demand", spot=lambda o: o.spot, price=lambda o: o.price)
