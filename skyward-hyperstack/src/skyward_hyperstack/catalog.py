"""From a spec to the Hyperstack flavors a node may be created with, and their prices.

Hyperstack sells fixed shapes per region ("n3-A100x1": one A100-80G-PCIe, 28 vCPUs, 120 GB) and
says which are in stock now (`GET /core/flavors`, `stock_available`); prices are per GPU per hour
in the pricebook (`GET /pricebook`, keyed by the flavor's `gpu` name), so a flavor costs its GPU
count times that. `offer_of` reads a flavor as the market's `Offer`; a launch tries `Rental`s in
price order, one refused for capacity falling over to the next. Hyperstack sells no spot VMs: every
rental is on demand, and `allocation="spot"` is refused naming the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from skyward.market.offer import Offer
from skyward.market.rental import Rental, fits, in_order, no_fit, number, on_demand_only

if TYPE_CHECKING:
    from skyward.spec import Spec


@attrs.frozen
class Flavor:
    """One flavor of one region, priced (USD per VM per hour; 0.0: the pricebook does not say)."""

    name: str
    region: str
    gpu: str
    gpus: int
    vcpus: int
    memory_gb: float
    disk_gb: float
    in_stock: bool
    price: float

    @classmethod
    def from_api(cls, row: dict[str, Any], prices: Mapping[str, float]) -> Flavor:
        gpu, gpus = str(row.get("gpu") or ""), int(number(row.get("gpu_count")))
        price = prices.get(gpu, 0.0) * gpus if gpu else prices.get(str(row["name"]), 0.0)
        return cls(
            name=str(row["name"]),
            region=str(row.get("region_name") or ""),
            gpu=gpu,
            gpus=gpus,
            vcpus=int(number(row.get("cpu"))),
            memory_gb=number(row.get("ram")),
            disk_gb=number(row.get("disk")),
            in_stock=bool(row.get("stock_available")),
            price=price,
        )

    @property
    def gpu_memory_gb(self) -> float | None:
        """Each GPU's memory, read from its name ("A100-80G-PCIe": 80), None when it does not say."""
        found = re.search(r"(\d+)G(?:B)?\b", self.gpu, re.IGNORECASE)
        return float(found.group(1)) if found else None


def offer_of(flavor: Flavor, provider: str = "hyperstack") -> Offer:
    """The market's record of a flavor in its region (on demand only)."""
    return Offer(
        provider=provider,
        instance_type=flavor.name,
        accelerator=flavor.gpu or None,
        accelerator_count=flavor.gpus,
        accelerator_memory_gb=flavor.gpu_memory_gb,
        vcpus=flavor.vcpus or None,
        memory_gb=flavor.memory_gb or None,
        region=flavor.region,
        on_demand_price=flavor.price,
    )


def matching(spec: Spec, flavors: Iterable[Flavor]) -> list[Flavor]:
    """The flavors that carry the spec's accelerator (count, memory), vCPUs and memory; a
    `NoOffersError` naming the close GPUs when none does."""
    listed = list(flavors)
    found = [
        f
        for f in listed
        if fits(
            spec,
            cloud="Hyperstack",
            card=f.gpu,
            gpus=f.gpus,
            gpu_memory_gb=f.gpu_memory_gb,
            vcpus=f.vcpus,
            memory_gb=f.memory_gb,
        )
    ]
    if not found:
        raise no_fit(spec, (f.gpu for f in listed), cloud="Hyperstack", kind="flavor")
    return found


def plan(spec: Spec, flavors: Iterable[Flavor], regions: tuple[str, ...] = ()) -> list[Rental]:
    """Every priced flavor in stock that the spec allows, cheapest first (all on demand)."""
    on_demand_only(spec.allocation, "Hyperstack")
    offers = []
    for flavor in flavors:
        if not flavor.in_stock or flavor.price <= 0 or (regions and flavor.region not in regions):
            continue
        rental = Rental(offer=offer_of(flavor), spot=False, ref=flavor)
        if spec.max_hourly_cost is None or rental.price <= spec.max_hourly_cost:
            offers.append(rental)
    return in_order(offers, spec.allocation, spot=lambda o: o.spot, price=lambda o: o.price)
