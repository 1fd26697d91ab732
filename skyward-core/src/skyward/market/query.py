"""The fluent query over the catalog: `sky.offers().accelerator("A100").spot().cheapest(3)`.

An `OfferQuery` is a frozen value: each filter returns a new query, so one can be kept and
narrowed several ways. Nothing is read until a terminal (`all`, `first`, `cheapest`, `count`,
iteration); each reads the catalog file (SQLite) afresh, over the offers of the providers the
catalog was made from (`status`).

The price a query filters and orders by is what a pool would pay first: the spot price after
`spot()`, the on-demand price after `on_demand()`, else the lower of the two.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Literal, overload

import attrs

from skyward.accelerators import Accelerator
from skyward.accelerators._model import normalize_memory
from skyward.errors import ConfigurationError
from skyward.market.offer import Offer, canonical_accelerator
from skyward.market.refresh import SourceStatus
from skyward.market.store import COLUMNS, Store

Order = Literal["price", "memory", "count", "vcpus"]
ORDERS: tuple[str, ...] = ("price", "memory", "count", "vcpus")
_BOTH = (
    "(CASE WHEN spot_price IS NULL THEN on_demand_price WHEN on_demand_price IS NULL THEN spot_price "
    "ELSE MIN(spot_price, on_demand_price) END)"
)
_PRICE = {None: _BOTH, "spot": "spot_price", "on-demand": "on_demand_price"}
#: Each order's columns (most to least significant) and whether it is descending by default.
_ORDER_BY: dict[str, tuple[tuple[str, ...], bool]] = {
    "price": ((), False),
    "memory": (("accelerator_memory_gb", "memory_gb"), True),
    "count": (("accelerator_count",), True),
    "vcpus": (("vcpus",), True),
}


def _gb(value: object, what: str) -> float:
    """`80`, `80.0` or `"80GB"` -> 80.0; anything else is a `ConfigurationError` naming `what`."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str):
        try:
            text = normalize_memory(value)
        except ConfigurationError:
            text = None
        if text:
            return float(text.removesuffix("GB"))
    raise ConfigurationError(f"{what}={value!r}: expected a size in GB such as 80 or \"80GB\"")


def _number(value: object, what: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 and math.isfinite(value):
        return float(value)
    raise ConfigurationError(f"{what}={value!r}: expected a number of 0 or more")


@attrs.frozen
class OfferQuery:
    """Offers from the catalog, filtered, ordered and limited (see the module)."""

    store: Store
    status: tuple[SourceStatus, ...]
    where: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    allocation: Literal["spot", "on-demand"] | None = None
    order: str = "price"
    descending: bool | None = None
    limit_to: int | None = None

    # -- what the catalog is made of -----------------------------------------------------------------

    @property
    def errors(self) -> tuple[SourceStatus, ...]:
        """The providers whose last refresh failed (stale or with nothing to show)."""
        return tuple(s for s in self.status if s.state in ("stale", "failed"))

    @property
    def stale(self) -> bool:
        return any(s.state == "stale" for s in self.status)

    # -- filters -----------------------------------------------------------------------------------

    def _and(self, clause: str, *params: Any) -> OfferQuery:
        return attrs.evolve(self, where=(*self.where, (clause, params)))

    def accelerator(
        self, name: str | Accelerator, count: float | None = None, memory: float | str | None = None
    ) -> OfferQuery:
        """Offers carrying this card (catalog name, any spelling: "A100", "a100", "RTX 4090"), with
        at least `count` of them and at least `memory` GB each, when given. An `Accelerator`
        value brings its own count and memory unless these are given."""
        if isinstance(name, Accelerator):
            count = name.count if count is None else count
            memory = (name.memory_gb or None) if memory is None else memory
            name = name.name
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError(f"accelerator={name!r}: expected a card name such as \"A100\"")
        query = self._and("accelerator = ? COLLATE NOCASE", canonical_accelerator(name))
        if count is not None:
            query = query.accelerator_count(count)
        if memory is not None:
            query = query.accelerator_memory(memory)
        return query

    def accelerator_count(self, at_least: float) -> OfferQuery:
        """Machines with at least this many accelerators (a fraction asks for a whole card)."""
        return self._and("accelerator_count >= ?", math.ceil(_number(at_least, "count")))

    def accelerator_memory(self, at_least: float | str) -> OfferQuery:
        """Accelerators with at least this much memory each (GB, or "80GB"); providers report
        usable memory, so 5% less still counts."""
        return self._and("accelerator_memory_gb >= ?", _gb(at_least, "accelerator_memory") * 0.95)

    def cpu_only(self) -> OfferQuery:
        """Machines without accelerators."""
        return self._and("accelerator IS NULL")

    def vcpus(self, at_least: float) -> OfferQuery:
        return self._and("vcpus >= ?", _number(at_least, "vcpus"))

    def memory(self, at_least: float | str) -> OfferQuery:
        """Machines with at least this much memory (GB, or "64GB")."""
        return self._and("memory_gb >= ?", _gb(at_least, "memory") * 0.97)

    def region(self, name: str) -> OfferQuery:
        """Offers in this region, as the provider names it (case aside)."""
        return self._and("region = ? COLLATE NOCASE", str(name))

    def provider(self, name: str) -> OfferQuery:
        return self._and("provider = ? COLLATE NOCASE", str(name))

    def spot(self) -> OfferQuery:
        """Interruptible offers only, priced at their spot price."""
        return attrs.evolve(self._and("spot_price IS NOT NULL"), allocation="spot")

    def on_demand(self) -> OfferQuery:
        """On-demand offers only, priced at their on-demand price."""
        return attrs.evolve(self._and("on_demand_price IS NOT NULL"), allocation="on-demand")

    def max_price(self, usd_per_hour: float) -> OfferQuery:
        """Offers whose price (see the module) is at most this, in USD per machine per hour."""
        return self._and(f"{_PRICE[self.allocation]} <= ?", _number(usd_per_hour, "max_price"))

    def filter(self, **filters: Any) -> OfferQuery:
        """Several filters by keyword, as `sky.offers(...)` and `sky offers` take them: `accelerator`,
        `count`, `accelerator_memory`, `vcpus`, `memory`, `region`, `provider`, `allocation`
        ("spot" or "on-demand"), `max_price`. None leaves a filter out."""
        given = {k: v for k, v in filters.items() if v is not None}
        known = {"accelerator", "count", "accelerator_memory", "vcpus", "memory", "region", "provider",
                 "allocation", "max_price"}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigurationError(
                f"unknown offer filter {unknown[0]!r}; use one of: {', '.join(sorted(known))}"
            )
        query = self
        if "accelerator" in given:
            query = query.accelerator(given["accelerator"])
        if "count" in given:
            query = query.accelerator_count(given["count"])
        if "accelerator_memory" in given:
            query = query.accelerator_memory(given["accelerator_memory"])
        for name in ("vcpus", "memory", "region", "provider"):
            if name in given:
                query = getattr(query, name)(given[name])
        allocation = given.get("allocation")
        if allocation not in (None, "spot", "on-demand"):
            raise ConfigurationError(f'allocation={allocation!r}: expected "spot" or "on-demand"')
        if allocation:
            query = query.spot() if allocation == "spot" else query.on_demand()
        if "max_price" in given:
            query = query.max_price(given["max_price"])
        return query

    # -- order and limit ---------------------------------------------------------------------------

    def order_by(self, key: Order | str, descending: bool | None = None) -> OfferQuery:
        """"price" (cheapest first), "memory" (most accelerator memory per card, then machine
        memory), "count" (most accelerators) or "vcpus" (most); `descending` turns it around.
        Ties go to the cheaper offer."""
        if key not in ORDERS:
            raise ConfigurationError(f"order_by({key!r}): expected one of {', '.join(ORDERS)}")
        return attrs.evolve(self, order=key, descending=descending)

    def limit(self, n: int) -> OfferQuery:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigurationError(f"limit({n!r}): expected a whole number of 1 or more")
        return attrs.evolve(self, limit_to=n)

    # -- terminals ---------------------------------------------------------------------------------

    def _sql(self, select: str, limit: int | None, order: bool = True) -> tuple[str, list[Any]]:
        sources = [s.source for s in self.status if s.usable]
        clauses = [f"source IN ({', '.join('?' for _ in sources) or 'NULL'})"]
        params: list[Any] = list(sources)
        for clause, values in self.where:
            clauses.append(clause)
            params.extend(values)
        sql = f"SELECT {select} FROM offers WHERE {' AND '.join(clauses)}"
        if order:
            price = _PRICE[self.allocation]
            columns, default_descending = _ORDER_BY[self.order]
            descending = default_descending if self.descending is None else self.descending
            direction = "DESC" if descending else "ASC"
            keys = [f"{c} {direction} NULLS LAST" for c in columns] or [f"{price} {direction} NULLS LAST"]
            keys += [f"{price} ASC NULLS LAST", "provider", "instance_type", "region"]
            sql += " ORDER BY " + ", ".join(keys)
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return sql, params

    def all(self) -> list[Offer]:
        """Every matching offer, in order, up to the limit."""
        return self.store.select(*self._sql(", ".join(COLUMNS), self.limit_to))

    def first(self) -> Offer | None:
        """The first offer in order (the cheapest, unless ordered otherwise), or None."""
        found = self.store.select(*self._sql(", ".join(COLUMNS), 1))
        return found[0] if found else None

    @overload
    def cheapest(self) -> Offer | None: ...
    @overload
    def cheapest(self, n: int) -> list[Offer]: ...

    def cheapest(self, n: int | None = None) -> Offer | list[Offer] | None:
        """The cheapest offer (None when none matches), or with `n` the `n` cheapest, cheapest first."""
        ordered = attrs.evolve(self, order="price", descending=False)
        if n is None:
            return ordered.first()
        return ordered.limit(n).all()

    def count(self) -> int:
        """How many offers match (order and limit aside)."""
        return int(self.store.scalar(*self._sql("COUNT(*)", None, order=False)))

    def __iter__(self) -> Iterator[Offer]:
        return iter(self.all())
