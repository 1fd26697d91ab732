"""One offer: a machine a provider rents, what it carries and what it costs per hour.

Providers spell accelerators their own way ("A100 SXM4", "NVIDIA A100-SXM4-80GB", "A100"); an
offer carries the catalog's name (`sky.accelerators`), so one filter finds the same card on every
provider. A name the catalog does not know is kept as the provider wrote it.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from skyward.accelerators import resolve
from skyward.errors import ConfigurationError


def canonical_accelerator(name: str | None) -> str | None:
    """The catalog's name for a provider's spelling of a card ("A100 SXM4" -> "A100"), or the name
    itself when the catalog does not know it; None (or "") for a machine without accelerator."""
    if not name or not name.strip():
        return None
    try:
        found = resolve(name)
    except ConfigurationError:
        return name.strip()
    return found.name if found is not None else None


def _price(value: Any) -> float | None:
    """A positive, finite price in USD, else None (providers say 0 for "not sold that way")."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 and math.isfinite(number) else None


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


@attrs.frozen(kw_only=True)
class Offer:
    """One way to rent one machine, as the provider lists it now.

    `provider` is the provider's name in `skyward.toml` (`"aws"`, `"runpod"`, `"vastai"`).
    `accelerator` is the catalog's card name (None: no accelerator), `accelerator_count` how many
    per machine, `accelerator_memory_gb` each one's memory. `vcpus` and `memory_gb` are the
    machine's (None when the provider does not say). `region` is where it runs, in the provider's
    own terms (an AWS region, a Vast.ai country, RunPod's cloud). Prices are USD per machine per
    hour: `spot_price` for an interruptible machine (AWS spot, RunPod interruptible, a Vast.ai
    bid), `on_demand_price` otherwise; None where the provider does not rent it that way or does
    not say.
    """

    provider: str
    instance_type: str
    accelerator: str | None = attrs.field(default=None, converter=canonical_accelerator)
    accelerator_count: float = attrs.field(default=0.0, converter=float)
    accelerator_memory_gb: float | None = attrs.field(default=None, converter=_optional_float)
    vcpus: float | None = attrs.field(default=None, converter=_optional_float)
    memory_gb: float | None = attrs.field(default=None, converter=_optional_float)
    region: str = ""
    spot_price: float | None = attrs.field(default=None, converter=_price)
    on_demand_price: float | None = attrs.field(default=None, converter=_price)

    @property
    def price(self) -> float | None:
        """The cheapest way to rent it: the lower of its two prices (None when neither is known)."""
        known = [p for p in (self.spot_price, self.on_demand_price) if p is not None]
        return min(known) if known else None

    def price_for(self, allocation: str) -> float | None:
        """What a pool with this `Spec.allocation` pays for it first: "spot" the spot price,
        "on-demand" the on-demand price, "spot-if-available" the spot price where there is one,
        "cheapest" the lower of the two."""
        if allocation == "spot":
            return self.spot_price
        if allocation == "on-demand":
            return self.on_demand_price
        if allocation == "spot-if-available":
            return self.spot_price if self.spot_price is not None else self.on_demand_price
        return self.price

    def as_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "price": self.price}

    def __str__(self) -> str:
        card = f"{self.accelerator_count:g}x {self.accelerator}" if self.accelerator else "no accelerator"
        price = f"${self.price:.4g}/h" if self.price is not None else "price unknown"
        return f"{self.provider} {self.instance_type} ({card}, {self.region or 'anywhere'}): {price}"
