"""From a spec to the Novita products an instance may be created from, and the order to try them.

A Novita *product* is one GPU model in one cluster ("RTX 4090 24GB"), rented per GPU at `price`
(on demand) or `spotPrice` (spot), both in units of 1/100000 USD per GPU per hour, and
`availableDeploy` says whether it can be started now. An `Offer` is a product, spot or not, for
the spec's GPU count; `plan` orders them as the spec's allocation says ("spot" only spot,
"on-demand" never spot, "spot-if-available" every spot offer first, "cheapest" both by price), so
launching is "try each in turn": a product refused for capacity falls over to the next.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from skyward.errors import NoOffersError
from skyward.market.rental import SPOT_KINDS, in_order, memory_fits, names_card

if TYPE_CHECKING:
    from skyward.accelerators import Accelerator
    from skyward.spec import Spec

#: Novita's prices are integers in this fraction of a US dollar.
PRICE_UNIT = 100_000


def _dollars(value: Any) -> float:
    try:
        return float(value) / PRICE_UNIT
    except (TypeError, ValueError):
        return 0.0


@attrs.frozen
class Offer:
    """One product for `gpus` GPUs, spot or not; prices per node (all its GPUs) per hour, USD."""

    product_id: str
    name: str
    gpus: int
    spot: bool
    price: float
    on_demand_price: float
    vcpus: int = 0
    memory_gb: float = 0.0

    @classmethod
    def from_api(cls, row: dict[str, Any], gpus: int, spot: bool) -> Offer:
        on_demand = _dollars(row.get("price")) * gpus
        return cls(
            product_id=str(row["id"]), name=str(row.get("name") or row["id"]), gpus=gpus, spot=spot,
            price=_dollars(row.get("spotPrice")) * gpus if spot else on_demand, on_demand_price=on_demand,
            vcpus=int(float(row.get("cpuPerGpu") or 0) * gpus),
            memory_gb=float(row.get("memoryPerGpu") or 0) * gpus,
        )

    def __str__(self) -> str:
        return f"{self.gpus}x {self.name} ({'spot' if self.spot else 'on-demand'} ${self.price:.2f}/h)"


def fits(name: str, accelerator: Accelerator) -> bool:
    """Whether a product named `name` ("A100 SXM 80GB") carries `accelerator` (memory included)."""
    found = re.search(r"(\d+)\s*GB", name, re.IGNORECASE)
    listed = float(found[1]) if found else None
    return names_card(name, accelerator.name) and memory_fits(listed, accelerator.memory_gb)


def plan(spec: Spec, products: dict[bool, list[dict[str, Any]]], gpus: int) -> list[Offer]:
    """The offers the spec allows that Novita can start now, in the order to try them."""
    assert spec.accelerator is not None
    offers = []
    for spot in SPOT_KINDS[spec.allocation]:
        for row in products.get(spot, []):
            if not row.get("id") or not row.get("availableDeploy", True):
                continue
            if not fits(str(row.get("name")), spec.accelerator):
                continue
            offer = Offer.from_api(row, gpus, spot)
            if offer.price <= 0 or (spec.vcpus and offer.vcpus < spec.vcpus):
                continue
            if (spec.memory_gb and offer.memory_gb < spec.memory_gb) or (
                spec.max_hourly_cost is not None and offer.price > spec.max_hourly_cost
            ):
                continue
            offers.append(offer)
    return in_order(offers, spec.allocation, spot=lambda o: o.spot, price=lambda o: o.price)


def no_product(spec: Spec, names: Iterable[str]) -> NoOffersError:
    """No product carries the accelerator: `NoOffersError` (a `ProvisionError`), naming what does."""
    acc = spec.accelerator
    assert acc is not None
    listed = sorted(set(names))
    close = difflib.get_close_matches(acc.name, listed, n=4, cutoff=0.3)
    return NoOffersError(
        f"Novita has no product with {acc.count:g}x {acc.name}"
        + (f" ({acc.memory_gb:g} GB)" if acc.memory_gb else "")
        + f"; products: {', '.join(close or listed[:6]) or 'none'}"
    )
