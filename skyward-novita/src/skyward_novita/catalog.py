"""From a spec to the Novita products an instance may be created from, and the order to try them.

A Novita *product* is one GPU model in one cluster ("RTX 4090 24GB"), rented per GPU at `price`
(on demand) or `spotPrice` (spot), both in units of 1/100000 USD per GPU per hour, and
`availableDeploy` says whether it can be started now. `offer_of` reads a product as the market's
`Offer` (for `sky offers` and for a launch alike); a launch tries `Rental`s, a product's offer for
the spec's GPU count, spot or not; `plan` orders them as the spec's allocation says ("spot" only spot,
"on-demand" never spot, "spot-if-available" every spot offer first, "cheapest" both by price), so
launching is "try each in turn": a product refused for capacity falls over to the next.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from skyward.errors import NoOffersError
from skyward.market.offer import Offer
from skyward.market.rental import SPOT_KINDS, Rental, in_order, memory_fits, names_card

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


def _card(name: str) -> tuple[str, float | None]:
    """("RTX 4090", 24.0) from "RTX 4090 24GB"."""
    found = re.search(r"\s*(\d+)\s*GB\s*$", name, re.IGNORECASE)
    return (name[: found.start()].strip(), float(found[1])) if found else (name.strip(), None)


def offer_of(product: dict[str, Any], gpus: int, spot: float | None, provider: str = "novita") -> Offer:
    """The market's record of `gpus` GPUs of a product (`GET /products` row), at its per-GPU
    prices times `gpus`; `spot` is the spot price per GPU (None: not sold as spot)."""
    card, memory = _card(str(product.get("name") or product["id"]))
    region = product.get("regions")
    price = _dollars(product.get("price"))
    return Offer(
        provider=provider, instance_type=f"{gpus}x {product.get('name') or product['id']}", accelerator=card,
        accelerator_count=gpus, accelerator_memory_gb=memory,
        vcpus=float(product.get("cpuPerGpu") or 0) * gpus or None,
        memory_gb=float(product.get("memoryPerGpu") or 0) * gpus or None,
        region=str(region[0]) if isinstance(region, list) and region else "",
        spot_price=spot * gpus if spot else None, on_demand_price=price * gpus if price else None,
    )


def fits(name: str, accelerator: Accelerator) -> bool:
    """Whether a product named `name` ("A100 SXM 80GB") carries `accelerator` (memory included)."""
    found = re.search(r"(\d+)\s*GB", name, re.IGNORECASE)
    listed = float(found[1]) if found else None
    return names_card(name, accelerator.name) and memory_fits(listed, accelerator.memory_gb)


def plan(spec: Spec, products: dict[bool, list[dict[str, Any]]], gpus: int) -> list[Rental]:
    """The offers the spec allows that Novita can start now, in the order to try them."""
    assert spec.accelerator is not None
    offers = []
    for spot in SPOT_KINDS[spec.allocation]:
        for row in products.get(spot, []):
            if not row.get("id") or not row.get("availableDeploy", True):
                continue
            if not fits(str(row.get("name")), spec.accelerator):
                continue
            offer = Rental(offer=offer_of(row, gpus, _dollars(row.get("spotPrice")) if spot else None),
                           spot=spot, ref=str(row["id"]))
            if offer.price <= 0 or (spec.vcpus and (offer.offer.vcpus or 0) < spec.vcpus):
                continue
            if (spec.memory_gb and (offer.offer.memory_gb or 0) < spec.memory_gb) or (
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
