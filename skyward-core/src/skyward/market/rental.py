"""What a cloud that rents whole machines from a listing shares: the card a listing names, whole
GPUs, and the order a spec's allocation tries offers in.

A cloud's listing spells cards its own way ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB",
"1A100.22V" with model "A100"); the catalog says "A100" or "RTX_4090". Rather than a table that
goes stale with every card a cloud adds, names are compared as words (`card_words`): the spec's
card is in a listing when each of its words is ("rtx 4090" is in "nvidia geforce rtx 4090"), then
memory narrows the match (`memory_fits`). `canonical_accelerator` (`market.offer`) is the same
idea the other way round, for the catalog's records.

A launch tries `Rental`s: the market's `Offer` (the one record of a machine and its prices, the
same a cloud's `OfferSource` lists) rented spot or not, with the cloud's handle to create it.

`in_order` is the one reading of `Spec.allocation`: "spot" only spot offers, "on-demand" never
spot, "spot-if-available" every spot offer first, "cheapest" both kinds by price.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from skyward.errors import ConfigurationError, NoOffersError
from skyward.market.offer import Offer

if TYPE_CHECKING:
    from skyward.spec import Spec

T = TypeVar("T")

#: Words that say nothing about which card it is (vendors, brands, form factors, units).
NOISE = frozenset(
    {
        "",
        "nvidia",
        "geforce",
        "amd",
        "instinct",
        "oam",
        "generation",
        "tesla",
        "radeon",
        "sxm",
        "sxm4",
        "sxm5",
        "pcie",
        "gb",
    }
)
#: Which kinds (spot or not) each allocation rents, in the order they are tried.
SPOT_KINDS: dict[str, tuple[bool, ...]] = {
    "spot": (True,),
    "on-demand": (False,),
    "spot-if-available": (True, False),
    "cheapest": (True, False),
}


def number(value: object) -> float:
    """A listing's number, given as a number or numeric text ("24", 24.0); 0.0 where the row has
    none or another type: listings are JSON written by each cloud's own hand, and one odd field
    must not drop the whole listing."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


def card_words(text: str) -> frozenset[str]:
    """The words of a card's name that tell it apart ("NVIDIA A100-SXM4-80GB" -> a100, 80gb)."""
    return frozenset(re.split(r"[^a-z0-9]+", text.lower())) - NOISE


def names_card(listed: str, card: str) -> bool:
    """Whether a listing's text (`listed`) names the catalog's `card` ("RTX_4090")."""
    wanted = card_words(card.replace("_", " "))
    return bool(wanted) and wanted <= card_words(listed)


def memory_fits(listed_gb: float | None, wanted_gb: float | None, slack: float = 0.1) -> bool:
    """Whether a card with `listed_gb` is the `wanted_gb` one, within `slack` (unknown: it is)."""
    return not (wanted_gb and listed_gb and abs(listed_gb - wanted_gb) > slack * wanted_gb)


def whole_gpus(count: float, cloud: str) -> int:
    """`cloud` rents whole GPUs: 2.0 is 2, 0.5 is refused, naming the cloud and the fix."""
    if count != math.floor(count):
        raise ConfigurationError(
            f"{cloud} rents whole GPUs; accelerator count {count:g} is a fraction: ask for {math.ceil(count)}"
        )
    return int(count)


def fits(
    spec: Spec, *, cloud: str, card: str, gpus: float, gpu_memory_gb: float | None, vcpus: float,
    memory_gb: float,
) -> bool:
    """Whether a listed machine (`card` named in the listing's words, `gpus` of it with
    `gpu_memory_gb` each, `vcpus`, `memory_gb`) is what `spec` asks: its accelerator's card,
    count and memory (no GPU for a CPU spec), and at least its vCPUs and memory."""
    acc = spec.accelerator
    if acc is None:
        if gpus:
            return False
    elif gpus != whole_gpus(acc.count, cloud) or not (
        names_card(card, acc.name) and memory_fits(gpu_memory_gb, acc.memory_gb)
    ):
        return False
    return not ((spec.vcpus and vcpus < spec.vcpus) or (spec.memory_gb and memory_gb < spec.memory_gb))


def no_fit(spec: Spec, cards: Iterable[str], *, cloud: str, kind: str) -> NoOffersError:
    """The error when nothing `cloud` lists fits `spec`: what was asked, and the listed `cards`
    closest to it (`kind` names what the cloud sells: "plan", "instance type")."""
    acc = spec.accelerator
    memory = f" ({acc.memory_gb:g} GB)" if acc is not None and acc.memory_gb else ""
    wanted = f"a CPU {kind}" if acc is None else f"{acc.count:g}x {acc.name}{memory}"
    names = sorted({c for c in cards if c})
    close = difflib.get_close_matches(acc.name if acc else "CPU", names, n=4, cutoff=0.3)
    return NoOffersError(
        f"{cloud} has no {kind} with {wanted}"
        + (f" and >= {spec.vcpus:g} vCPUs" if spec.vcpus else "")
        + (f" and >= {spec.memory_gb:g} GB RAM" if spec.memory_gb else "")
        + f"; close GPUs: {', '.join(close or names[:6]) or 'none'}"
    )


def on_demand_only(allocation: str, cloud: str) -> None:
    """A cloud that sells no spot machines refuses `allocation="spot"`, naming the fix (every
    other allocation takes its on-demand machines)."""
    if allocation == "spot":
        raise NoOffersError(
            f'{cloud} sells no spot machines: use allocation="on-demand" (or "spot-if-available", '
            "which takes on-demand machines there)"
        )


def in_order(
    offers: Iterable[T], allocation: str, *, spot: Callable[[T], bool], price: Callable[[T], float]
) -> list[T]:
    """The offers `allocation` rents, in the order to try them (see the module)."""
    kinds = SPOT_KINDS[allocation]
    kept = [o for o in offers if spot(o) in kinds]
    if allocation == "cheapest":
        return sorted(kept, key=price)
    return sorted(kept, key=lambda o: (not spot(o), price(o)))


@attrs.frozen(kw_only=True)
class Rental:
    """One way to rent one node, as a launch tries it: the market's record of the machine
    (`offer`: what it carries, both its prices), rented spot or not, and the cloud's own handle
    to create it (`ref`: a product id, an instance type in a location, a marketplace offer)."""

    offer: Offer
    spot: bool
    ref: Any = None

    @property
    def price(self) -> float:
        """USD per node per hour as rented (0.0 where the cloud does not say)."""
        return (self.offer.spot_price if self.spot else self.offer.on_demand_price) or 0.0

    @property
    def on_demand_price(self) -> float:
        return self.offer.on_demand_price or 0.0

    def __str__(self) -> str:
        where = f" in {self.offer.region}" if self.offer.region else ""
        kind = "spot" if self.spot else "on-demand"
        return f"{self.offer.instance_type}{where} ({kind} ${self.price:.2f}/h)"
