"""From a spec to the Massed Compute products a node may be deployed as, and their prices.

Massed Compute sells fixed shapes by product name ("gpu_1x_l40": one L40, its vCPUs, memory and
disk), each at one on-demand price per hour in cents, and says which regions have one free right
now (`GET /gpu-inventory`, the listing a launch reads again each time). `Product.from_api` reads
one inventory row; its card and GPU count come from the product name and description ("1x L40
(48 GB)"), matched as words (`skyward.market.rental.names_card`). `plan` lists the `Rental`s a
launch tries in turn: cheapest first, one per region with capacity where regions are asked for,
else one per product deployed to "any" region (Massed Compute's own choice). There is no spot.
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

PROVIDER = "massedcompute"
#: The region a deploy names to let Massed Compute place the machine where it has room.
ANY_REGION = "any"
_COUNT = re.compile(r"(?:^|[^a-z0-9])(\d+)x(?:[^a-z0-9]|$)")
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*gb", re.IGNORECASE)


@attrs.frozen
class Product:
    """One row of `GET /gpu-inventory` (price per machine per hour, USD)."""

    name: str
    description: str
    gpus: int
    gpu_memory_gb: float | None
    vcpus: int
    memory_gb: float
    price: float
    regions: tuple[str, ...]
    capacity: int

    @classmethod
    def from_api(cls, name: str, row: Mapping[str, Any]) -> Product:
        kind = row.get("instance_type") if isinstance(row.get("instance_type"), dict) else {}
        specs = kind.get("specs") if isinstance(kind.get("specs"), dict) else {}
        description = str(kind.get("description") or "")
        words = f"{name.replace('_', ' ')} {description}".lower()
        count = _COUNT.search(words)
        memory = _MEMORY.search(description)
        regions = row.get("regions_with_capacity_available") or []
        return cls(
            name=str(kind.get("name") or name),
            description=description,
            gpus=int(count.group(1)) if count else 0,
            gpu_memory_gb=float(memory.group(1)) if memory else None,
            vcpus=int(number(specs.get("vcpu_count"))),
            memory_gb=number(specs.get("memory_gib")),
            price=number(kind.get("price_cents_per_hour")) / 100,
            regions=tuple(str(r.get("name")) for r in regions if isinstance(r, dict) and r.get("name")),
            capacity=int(number(row.get("capacity_available"))),
        )

    @property
    def card(self) -> str:
        """The card's name as the description gives it ("L40" of "1x L40 (48 GB)")."""
        text = _MEMORY.sub("", _COUNT.sub(" ", self.description.lower())).strip(" ()")
        return text.upper() or self.name


def offer_of(product: Product, region: str = "") -> Offer:
    """The market's record of a product (in `region`, where one is known)."""
    return Offer(
        provider=PROVIDER,
        instance_type=product.name,
        accelerator=product.card if product.gpus else None,
        accelerator_count=product.gpus,
        accelerator_memory_gb=product.gpu_memory_gb,
        vcpus=product.vcpus or None,
        memory_gb=product.memory_gb or None,
        region=region,
        on_demand_price=product.price or None,
    )


def matching(spec: Spec, products: Iterable[Product]) -> list[Product]:
    """The products that carry the spec's accelerator (count, memory) and its vCPUs and memory."""
    on_demand_only(spec.allocation, "Massed Compute")
    listed = list(products)
    found = [
        p
        for p in listed
        if fits(
            spec,
            cloud="Massed Compute",
            card=f"{p.name.replace('_', ' ')} {p.description}",
            gpus=p.gpus,
            gpu_memory_gb=p.gpu_memory_gb,
            vcpus=p.vcpus,
            memory_gb=p.memory_gb,
        )
    ]
    if not found:
        raise no_fit(spec, [p.card for p in listed if p.gpus], cloud="Massed Compute", kind="product")
    return found


def plan(spec: Spec, products: Iterable[Product], regions: tuple[str, ...] = ()) -> list[Rental]:
    """Every offer the spec allows that has capacity now, cheapest first (see the module)."""
    offers = []
    for product in products:
        if product.price <= 0 or product.capacity <= 0:
            continue
        if spec.max_hourly_cost is not None and product.price > spec.max_hourly_cost:
            continue
        wanted = [r for r in product.regions if r in regions] if regions else [ANY_REGION]
        offers.extend(Rental(offer=offer_of(product, region), spot=False, ref=product) for region in wanted)
    return in_order(offers, "on-demand", spot=lambda o: o.spot, price=lambda o: o.price)
