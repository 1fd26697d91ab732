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

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from skyward.errors import ConfigurationError, NoOffersError
from skyward.market.offer import Offer

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
