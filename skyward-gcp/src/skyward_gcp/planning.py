"""From a spec to the offers a node is tried on: shapes that fit, in the zones that list them.

`matching` picks the shapes (`catalog.SHAPES`) that carry the spec's accelerator (card, count,
memory) and its vCPUs and memory. `plan` pairs each with the zones whose `machineTypes` and
`acceleratorTypes` listings name it, spot or not as the spec's allocation says, in the order to
try them (`market.rental.in_order`): a zone refused for capacity falls over to the next offer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from skyward.errors import NoOffersError
from skyward.market.rental import SPOT_KINDS, Rental, in_order, memory_fits, names_card, whole_gpus
from skyward_gcp.catalog import SHAPES, Shape, offer_of

if TYPE_CHECKING:
    from skyward.spec import Spec


def _fits(shape: Shape, spec: Spec) -> bool:
    acc = spec.accelerator
    if acc is None:
        return shape.gpus == 0
    return (
        shape.card is not None
        and shape.gpus == whole_gpus(acc.count, "GCP")
        and names_card(shape.card, acc.name)
        and memory_fits(shape.gpu_memory_gb, acc.memory_gb)
    )


def matching(spec: Spec, shapes: Iterable[Shape] = SHAPES) -> list[Shape]:
    """The shapes that fit the spec; a `NoOffersError` naming the cards there are when none does."""
    found = [
        s
        for s in shapes
        if _fits(s, spec)
        and not (spec.vcpus and s.vcpus < spec.vcpus)
        and not (spec.memory_gb and s.memory_gb < spec.memory_gb)
    ]
    if found:
        return found
    acc = spec.accelerator
    memory = f" ({acc.memory_gb:g} GB)" if acc is not None and acc.memory_gb else ""
    wanted = "a CPU machine" if acc is None else f"{acc.count:g}x {acc.name}{memory}"
    cards = sorted({f"{s.card} {s.gpu_memory_gb:g}GB" for s in SHAPES if s.card})
    close = [c for c in cards if acc is not None and names_card(c, acc.name)]
    raise NoOffersError(
        f"GCP has no machine with {wanted}"
        + (f" and >= {spec.vcpus:g} vCPUs" if spec.vcpus else "")
        + (f" and >= {spec.memory_gb:g} GB RAM" if spec.memory_gb else "")
        + f"; its GPUs: {', '.join(close or cards)} (1, 2, 4 or 8 per machine; TPUs are not supported)"
    )


def listed(shape: Shape, names: set[str]) -> bool:
    """Whether a zone listing `names` (machine and accelerator types) can start `shape`."""
    return shape.machine_type in names and (not shape.accelerator_type or shape.accelerator_type in names)


def plan(spec: Spec, shapes: Iterable[Shape], zones: Mapping[str, set[str]]) -> list[Rental]:
    """Every offer of `shapes` in `zones` (zone -> the type names it lists) that the spec's
    allocation and `max_hourly_cost` allow, in the order to try them."""
    offers = []
    for spot in SPOT_KINDS[spec.allocation]:
        for shape in shapes:
            if (shape.spot if spot else shape.on_demand) is None:
                continue
            for zone, names in sorted(zones.items()):
                if not listed(shape, names):
                    continue
                offer = Rental(offer=offer_of(shape, zone), spot=spot, ref=(shape, zone))
                if spec.max_hourly_cost is None or offer.price <= spec.max_hourly_cost:
                    offers.append(offer)
    return in_order(offers, spec.allocation, spot=lambda o: o.spot, price=lambda o: o.price)
