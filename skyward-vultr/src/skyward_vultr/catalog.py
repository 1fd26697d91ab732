"""From a spec to the Vultr plans and regions a node may be created with, and their prices.

Vultr sells Cloud GPU instances as plans ("vcg-a100-12c-120g-80vram": one A100, 12 vCPUs, 120 GB
RAM), each at one hourly and one monthly price whatever the region, and says in which regions
each can be deployed (`GET /plans?type=vcg`, `locations`). A plan names its card (`gpu_type`,
"NVIDIA_A100") and the VRAM it carries in all (`gpu_vram_gb`): the GPU count is that VRAM over the
card's own memory (160 GB of A100 80 GB: two), unless the plan says `gpu_count`. Plans that carry a
slice of a card (4 GB of an A100) are left out: Skyward rents whole GPUs.

`offer_of` reads a plan in a region as the market's `Offer`; a launch tries `Rental`s, cheapest
first, one that Vultr refuses for capacity falling over to the next. Vultr sells no spot
instances: every rental is on demand, and `allocation="spot"` is refused naming the fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from skyward.accelerators import resolve
from skyward.errors import ConfigurationError
from skyward.market.offer import Offer
from skyward.market.rental import Rental, fits, in_order, no_fit, number, on_demand_only

if TYPE_CHECKING:
    from skyward.spec import Spec

#: How far a plan's VRAM over the card's memory may be from a whole count and still be one.
WHOLE_SLACK = 0.1


def card_of(gpu_type: str) -> str:
    """The card a plan's `gpu_type` names ("NVIDIA_A100" -> "A100"), as the catalog spells it."""
    words = gpu_type.replace("_", " ").split()
    text = " ".join(w for w in words if w.upper() not in ("NVIDIA", "AMD"))
    try:
        found = resolve(text)
    except ConfigurationError:
        return text
    return found.name if found is not None else text


def gpu_count(row: dict[str, Any], card: str) -> float:
    """How many whole cards a plan carries: its `gpu_count`, else its VRAM over the card's memory
    (a fraction for a plan with a slice of one); 0 for a plan without GPU."""
    if row.get("gpu_count"):
        return number(row["gpu_count"])
    vram = number(row.get("gpu_vram_gb"))
    if not card or vram <= 0:
        return 0.0
    try:
        known = resolve(card)
    except ConfigurationError:
        known = None
    per_card = known.memory_gb if known is not None and known.memory_gb else vram
    count = vram / per_card
    return float(round(count)) if round(count) >= 1 and abs(count - round(count)) <= WHOLE_SLACK else count


@attrs.frozen
class Plan:
    """One row of `GET /plans` (prices per instance, USD)."""

    name: str
    card: str
    gpus: float
    gpu_memory_gb: float
    vcpus: int
    memory_gb: float
    price: float
    regions: tuple[str, ...]

    @classmethod
    def from_api(cls, row: dict[str, Any]) -> Plan:
        card = card_of(str(row.get("gpu_type") or "")) if row.get("gpu_type") else ""
        gpus = gpu_count(row, card)
        return cls(
            name=str(row["id"]),
            card=card,
            gpus=gpus,
            gpu_memory_gb=number(row.get("gpu_vram_gb")) / gpus
            if gpus >= 1
            else number(row.get("gpu_vram_gb")),
            vcpus=int(number(row.get("vcpu_count"))),
            memory_gb=number(row.get("ram")) / 1024,
            price=number(row.get("hourly_cost")) or round(number(row.get("monthly_cost")) / 730, 3),
            regions=tuple(str(r) for r in row.get("locations") or () if r),
        )

    @property
    def whole(self) -> bool:
        """Whether it carries whole cards (or none), as Skyward rents them."""
        return self.gpus == int(self.gpus)


def offer_of(plan: Plan, region: str = "", provider: str = "vultr") -> Offer:
    """The market's record of a plan in `region` (on demand only)."""
    return Offer(
        provider=provider,
        instance_type=plan.name,
        accelerator=plan.card or None,
        accelerator_count=plan.gpus,
        accelerator_memory_gb=plan.gpu_memory_gb or None,
        vcpus=plan.vcpus or None,
        memory_gb=plan.memory_gb or None,
        region=region,
        on_demand_price=plan.price,
    )


def matching(spec: Spec, plans: Iterable[Plan]) -> list[Plan]:
    """The plans that carry the spec's accelerator (whole cards: count, memory), vCPUs and memory;
    a `NoOffersError` naming the close cards when none does."""
    plans = list(plans)
    found = [
        p
        for p in plans
        if p.whole
        and fits(
            spec,
            cloud="Vultr",
            card=p.card,
            gpus=p.gpus,
            gpu_memory_gb=p.gpu_memory_gb,
            vcpus=p.vcpus,
            memory_gb=p.memory_gb,
        )
    ]
    if not found:
        raise no_fit(spec, (p.card for p in plans), cloud="Vultr", kind="plan")
    return found


def plan(spec: Spec, plans: Iterable[Plan], regions: tuple[str, ...] = ()) -> list[Rental]:
    """Every priced plan, in every region that can deploy it now, that the spec allows: cheapest
    first (all on demand)."""
    on_demand_only(spec.allocation, "Vultr")
    offers = []
    for each in plans:
        for region in each.regions:
            if each.price <= 0 or (regions and region not in regions):
                continue
            rental = Rental(offer=offer_of(each, region), spot=False, ref=each)
            if spec.max_hourly_cost is None or rental.price <= spec.max_hourly_cost:
                offers.append(rental)
    return in_order(offers, spec.allocation, spot=lambda o: o.spot, price=lambda o: o.price)
