"""From a spec's accelerator to the RunPod GPU types and offers a pod may be created with.

RunPod names GPU types by id ("NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090") and display
name ("A100 SXM", "RTX 4090"); Skyward's catalog says "A100", "RTX_4090", with a memory size and
a form factor. Rather than a table that goes stale with every card RunPod adds, names are compared
as words ("rtx 4090" is in "nvidia geforce rtx 4090"), then memory and form factor narrow the
match. Several types can fit (an 80GB A100 comes as SXM and PCIe): all of them are offered,
cheapest first, and RunPod places the pod on whichever has room.

A launch tries `Rental`s (`skyward.market.rental`): a cloud (SECURE or COMMUNITY),
interruptible or not, and the fitting types (its `ref`), priced with the cheapest. `plan_offers`
orders them as the spec's allocation says, so launching is just "try each in turn".
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from skyward.errors import NoOffersError, ProvisionError
from skyward.market.offer import Offer, canonical_accelerator
from skyward.market.rental import Rental, card_words


def words(text: str) -> frozenset[str]:
    """Every word of a GPU type's names, form factors included (`card_words` drops them)."""
    return frozenset(re.split(r"[^a-z0-9]+", text.lower()))


def _price(value: Any) -> float | None:
    """A positive price, else None: RunPod reports 0 (or null) for what it does not offer."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


@attrs.frozen
class GpuType:
    """One row of RunPod's GPU type listing (GraphQL `gpuTypes`); prices are per GPU per hour."""

    id: str
    display_name: str
    memory_gb: float
    max_count: int = 8
    secure: bool = True
    community: bool = True
    secure_price: float | None = None
    community_price: float | None = None
    secure_spot_price: float | None = None
    community_spot_price: float | None = None

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> GpuType:
        return cls(
            id=str(raw["id"]),
            display_name=str(raw.get("displayName") or raw["id"]),
            memory_gb=float(raw.get("memoryInGb") or 0),
            max_count=int(raw.get("maxGpuCount") or 8),
            secure=bool(raw.get("secureCloud", True)),
            community=bool(raw.get("communityCloud", True)),
            secure_price=_price(raw.get("securePrice")),
            community_price=_price(raw.get("communityPrice")),
            secure_spot_price=_price(raw.get("secureSpotPrice")),
            community_spot_price=_price(raw.get("communitySpotPrice")),
        )

    @property
    def words(self) -> frozenset[str]:
        return card_words(self.id) | card_words(self.display_name)

    def price(self, cloud: str, interruptible: bool) -> float | None:
        """Per GPU per hour in `cloud`, None where RunPod does not rent it that way."""
        if cloud == "SECURE":
            return (self.secure_spot_price if interruptible else self.secure_price) if self.secure else None
        if not self.community:
            return None
        return self.community_spot_price if interruptible else self.community_price

    def __str__(self) -> str:
        return f"{self.display_name} {self.memory_gb:g}GB ({self.id})"


def card(gpu: GpuType) -> str:
    """The catalog's name of a RunPod type ("A100 SXM" -> "A100"), from its display name or id."""
    for name in (gpu.display_name, gpu.id):
        found = canonical_accelerator(name)
        if found is not None and found != name.strip():
            return found
    return gpu.display_name


def rental(cloud: str, interruptible: bool, gpu_types: tuple[GpuType, ...] = (), count: int = 0) -> Rental:
    """One way to rent a node: a cloud, interruptible or not, and the fitting types (none: a CPU
    pod), priced with the cheapest of them; `ref` is the types, which the pod request lists."""

    def cheapest(spot: bool) -> float | None:
        prices = [p for t in gpu_types if (p := t.price(cloud, spot)) is not None]
        return min(prices) * count if prices else None

    first = gpu_types[0] if gpu_types else None
    offer = Offer(
        provider="runpod", instance_type=f"{count}x {first.display_name}" if first else "CPU pod",
        accelerator=card(first) if first else None, accelerator_count=count if first else 0,
        accelerator_memory_gb=first.memory_gb or None if first else None, region=cloud,
        spot_price=cheapest(True), on_demand_price=cheapest(False),
    )
    return Rental(offer=offer, spot=interruptible, ref=gpu_types)


def match_gpu_types(accelerator: Any, types: Sequence[GpuType], count: int) -> tuple[GpuType, ...]:
    """The types that are `accelerator` (name, then memory and form factor, then count), cheapest
    first; a `NoOffersError` (a `ProvisionError`) naming what RunPod has instead when none is."""
    name = str(accelerator.name)
    exact = [t for t in types if name.lower() in (t.id.lower(), t.display_name.lower())]
    wanted = card_words(name.replace("_", " "))
    named = exact or [t for t in types if wanted and wanted <= t.words]
    if not named:
        raise NoOffersError(
            f"RunPod has no GPU type matching {accelerator}; close types: {_close(name, types)}. "
            "Pass one of these as the accelerator (e.g. sky.Compute(accelerator=\"RTX_4090\"))"
        )
    fitting = [t for t in named if _memory_fits(accelerator, t) and _form_fits(accelerator, t)]
    if not fitting:
        raise NoOffersError(
            f"RunPod rents {name} only as {', '.join(str(t) for t in named)}; none is {accelerator}: "
            "ask for one of these memory sizes or form factors"
        )
    roomy = [t for t in fitting if t.max_count >= count]
    if not roomy:
        most = max(t.max_count for t in fitting)
        raise NoOffersError(
            f"RunPod pods hold at most {most} x {name}; {count} were asked for: use more nodes with fewer "
            "GPUs each"
        )
    return tuple(sorted(roomy, key=_cheapest))


def plan_offers(
    gpu_types: Sequence[GpuType],
    count: int,
    clouds: Iterable[str],
    allocation: str,
    max_hourly_cost: float | None = None,
) -> list[Rental]:
    """Every offer the spec allows, in the order to try them.

    "spot": interruptible only; "on-demand": on-demand only; "spot-if-available": interruptible
    first, then on-demand; "cheapest": both, by price (an interruptible pod is cheaper wherever it
    exists). A CPU pod (no GPU types) is rented on demand. `max_hourly_cost` (per node) drops what
    costs more.
    """
    clouds = tuple(clouds)
    if not gpu_types:
        if allocation == "spot":
            raise ProvisionError(
                "RunPod: Skyward rents CPU pods on demand only; pass allocation=\"on-demand\" "
                "(or \"spot-if-available\") for a pool without accelerator"
            )
        return [rental(cloud, False) for cloud in clouds]
    kinds = {"spot": (True,), "on-demand": (False,)}.get(allocation, (True, False))
    offers = []
    for interruptible in kinds:
        for cloud in clouds:
            usable = tuple(
                sorted(
                    (t for t in gpu_types if t.price(cloud, interruptible) is not None),
                    key=lambda t, c=cloud, i=interruptible: t.price(c, i) or 0.0,
                )
            )
            if usable:
                offers.append(rental(cloud, interruptible, usable, count))
    if not offers:
        kind = {"spot": "interruptible", "on-demand": "on-demand"}.get(allocation, "any")
        raise NoOffersError(
            f"RunPod offers no {kind} {gpu_types[0].display_name} in {' or '.join(clouds)} cloud: "
            'try allocation="spot-if-available", RunPod(cloud_type="ALL") or another accelerator'
        )
    if max_hourly_cost is not None:
        affordable = [o for o in offers if o.price <= max_hourly_cost]
        if not affordable:
            cheapest = min(o.price for o in offers)
            raise NoOffersError(
                f"RunPod's cheapest offer for {count}x {gpu_types[0].display_name} is ${cheapest:.2f}/h per "
                f"node, above max_hourly_cost={max_hourly_cost:g}: raise it or choose another accelerator"
            )
        offers = affordable
    if allocation == "cheapest":
        offers.sort(key=lambda o: o.price)
    return offers


def _memory_fits(accelerator: Any, gpu: GpuType) -> bool:
    wanted = getattr(accelerator, "memory_gb", None)
    return wanted is None or not gpu.memory_gb or abs(gpu.memory_gb - wanted) <= max(1.0, 0.05 * wanted)


def _form_fits(accelerator: Any, gpu: GpuType) -> bool:
    form = getattr(accelerator, "form_factor", None)
    if not form:
        return True
    wanted = form.lower()
    return any(word.startswith(wanted) for word in words(gpu.id) | words(gpu.display_name))


def _cheapest(gpu: GpuType) -> float:
    prices = [p for p in (gpu.secure_price, gpu.community_price) if p is not None]
    return min(prices) if prices else float("inf")


def _close(name: str, types: Sequence[GpuType]) -> str:
    labels = {t.display_name: t for t in types}
    close = difflib.get_close_matches(name.replace("_", " "), list(labels), n=5, cutoff=0.4)
    if not close:
        wanted = card_words(name)
        close = [t.display_name for t in types if any(w and w[:2] in " ".join(t.words) for w in wanted)][:5]
    chosen = [labels[c] for c in close] or list(types)[:5]
    return ", ".join(str(t) for t in chosen) or "(RunPod listed no GPU types)"
