"""Offers per accelerator: how many there are, and the cheapest on each provider (`sky offers summary`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from skyward.market.offer import Offer


@attrs.frozen
class ProviderPrice:
    provider: str
    offers: int
    cheapest: float | None


@attrs.frozen
class AcceleratorSummary:
    """One card (None: machines without accelerator) across providers, cheapest provider first."""

    accelerator: str | None
    offers: int
    cheapest: float | None
    providers: tuple[ProviderPrice, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "accelerator": self.accelerator, "offers": self.offers, "cheapest": self.cheapest,
            "providers": [attrs.asdict(p) for p in self.providers],
        }


def _least(prices: Iterable[float | None]) -> float | None:
    known = [p for p in prices if p is not None]
    return min(known) if known else None


def summarize(offers: Iterable[Offer], price: Any = None) -> list[AcceleratorSummary]:
    """Group `offers` by card; `price(offer)` is what an offer costs (default: `Offer.price`).
    Cards in name order, machines without accelerator last."""
    price = price or (lambda offer: offer.price)
    groups: dict[str | None, dict[str, list[float | None]]] = {}
    for offer in offers:
        groups.setdefault(offer.accelerator, {}).setdefault(offer.provider, []).append(price(offer))
    found = []
    for card, by_provider in groups.items():
        providers = sorted(
            (ProviderPrice(name, len(prices), _least(prices)) for name, prices in by_provider.items()),
            key=lambda p: (p.cheapest is None, p.cheapest or 0.0, p.provider),
        )
        found.append(AcceleratorSummary(
            card, sum(p.offers for p in providers), _least(p.cheapest for p in providers), tuple(providers)
        ))
    return sorted(found, key=lambda s: (s.accelerator is None, (s.accelerator or "").lower()))
