"""From a spec to the Verda instance types, locations and prices a node may be deployed with.

Verda sells fixed shapes ("1A100.22V": one A100, 22 vCPUs), each with an on-demand and a spot
price per hour (`GET /instance-types`), and says which shapes each location can start right now
(`GET /instance-availability`). `offer_of` reads a type as the market's `Offer`; a launch tries
`Rental`s: a type's offer in a location, spot or not. `plan` lists them in the order the spec's
allocation says ("spot" only spot, "on-demand" never spot, "spot-if-available" every spot offer
first, "cheapest" both by price), so launching is "try each in turn": one that is refused for
capacity falls over to the next.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from skyward.errors import NoOffersError
from skyward.market.offer import Offer
from skyward.market.rental import SPOT_KINDS, Rental, in_order, memory_fits, names_card, number, whole_gpus

if TYPE_CHECKING:
    from skyward.accelerators import Accelerator
    from skyward.spec import Spec


def _size(row: dict[str, Any], field: str, key: str) -> float:
    part = row.get(field)
    return number(part.get(key)) if isinstance(part, dict) else 0.0


@attrs.frozen
class InstanceType:
    """One row of `GET /instance-types` (prices per instance per hour, USD)."""

    name: str
    model: str
    description: str
    gpus: int
    gpu_memory_gb: float
    vcpus: int
    memory_gb: float
    price: float
    spot_price: float

    @classmethod
    def from_api(cls, row: dict[str, Any]) -> InstanceType:
        gpu = row.get("gpu") if isinstance(row.get("gpu"), dict) else {}
        return cls(
            name=str(row["instance_type"]), model=str(row.get("model") or ""),
            description=str(row.get("name") or gpu.get("description") or row.get("description") or ""),
            gpus=int(number(gpu.get("number_of_gpus"))),
            gpu_memory_gb=_size(row, "gpu_memory", "size_in_gigabytes"),
            vcpus=int(_size(row, "cpu", "number_of_cores")),
            memory_gb=_size(row, "memory", "size_in_gigabytes"),
            price=number(row.get("price_per_hour")), spot_price=number(row.get("spot_price")),
        )

    @property
    def label(self) -> str:
        return f"{self.gpus}x {self.model or self.description}" if self.gpus else f"CPU {self.vcpus} vCPU"


def offer_of(kind: InstanceType, provider: str = "verda", location: str = "") -> Offer:
    """The market's record of an instance type (in `location`, where one is known)."""
    per_gpu = kind.gpu_memory_gb / kind.gpus if kind.gpus else None
    return Offer(
        provider=provider, instance_type=kind.name, accelerator=kind.model or None,
        accelerator_count=kind.gpus, accelerator_memory_gb=per_gpu,
        vcpus=kind.vcpus or None, memory_gb=kind.memory_gb or None, region=location,
        spot_price=kind.spot_price, on_demand_price=kind.price,
    )


def _fits_card(kind: InstanceType, accelerator: Accelerator) -> bool:
    per_gpu = kind.gpu_memory_gb / kind.gpus if kind.gpus else 0.0
    return names_card(f"{kind.model} {kind.description}", accelerator.name) and memory_fits(
        per_gpu, accelerator.memory_gb
    )


def matching(spec: Spec, types: Iterable[InstanceType]) -> list[InstanceType]:
    """The types that carry the spec's accelerator (count, memory) and its vCPUs and memory."""
    found = []
    for kind in types:
        if spec.accelerator is None:
            if kind.gpus:
                continue
        elif kind.gpus != whole_gpus(spec.accelerator.count, "Verda") or not _fits_card(
            kind, spec.accelerator
        ):
            continue
        if (spec.vcpus and kind.vcpus < spec.vcpus) or (spec.memory_gb and kind.memory_gb < spec.memory_gb):
            continue
        found.append(kind)
    if not found:
        raise _no_type(spec, list(types))
    return found


def _no_type(spec: Spec, types: list[InstanceType]) -> NoOffersError:
    """No instance type fits: `NoOffersError` (a `ProvisionError`), naming the closest types."""
    acc = spec.accelerator
    memory = f" ({acc.memory_gb:g} GB)" if acc is not None and acc.memory_gb else ""
    wanted = "a CPU instance" if acc is None else f"{acc.count:g}x {acc.name}{memory}"
    names = sorted({t.model for t in types if t.model})
    close = difflib.get_close_matches(acc.name if acc else "CPU", names, n=4, cutoff=0.3)
    return NoOffersError(
        f"Verda has no instance type with {wanted}"
        + (f" and >= {spec.vcpus:g} vCPUs" if spec.vcpus else "")
        + (f" and >= {spec.memory_gb:g} GB RAM" if spec.memory_gb else "")
        + f"; close types: {', '.join(close or names[:6]) or 'none'}"
    )


def plan(
    spec: Spec, types: Iterable[InstanceType], available: Mapping[bool, Mapping[str, set[str]]],
    locations: tuple[str, ...] = (),
) -> list[Rental]:
    """Every offer the spec allows that Verda can start now, in the order to try them."""
    offers = []
    for spot in SPOT_KINDS[spec.allocation]:
        for kind in types:
            if (kind.spot_price if spot else kind.price) <= 0:
                continue
            for location in sorted(available.get(spot, {}).get(kind.name, ())):
                if locations and location not in locations:
                    continue
                offer = Rental(offer=offer_of(kind, location=location), spot=spot, ref=kind)
                if spec.max_hourly_cost is None or offer.price <= spec.max_hourly_cost:
                    offers.append(offer)
    return in_order(offers, spec.allocation, spot=lambda o: o.spot, price=lambda o: o.price)
