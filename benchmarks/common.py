"""What every case shares: the run's settings, a figure and its measurements, small statistics."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

#: Marks in place of a number: the peer is not installed, was left out with --peers, does not
#: apply to the case, or failed (the error is printed as it happens).
MISSING, SKIPPED, NOT_APPLICABLE, FAILED = "missing", "skipped", "n/a", "error"


@dataclasses.dataclass(frozen=True)
class Config:
    quick: bool
    repeat: int

    def pick(self, full: Any, quick: Any) -> Any:
        return quick if self.quick else full


@dataclasses.dataclass
class Figure:
    """One row of the table: a measured quantity and, per framework, its runs or a mark."""

    key: str
    label: str
    unit: str
    better: str  # "lower" or "higher"
    values: dict[str, list[float] | str] = dataclasses.field(default_factory=dict)

    def add(self, peer: str, value: float) -> None:
        runs = self.values.setdefault(peer, [])
        if isinstance(runs, list):
            runs.append(value)

    def median(self, peer: str) -> float | None:
        runs = self.values.get(peer)
        return statistics.median(runs) if isinstance(runs, list) and runs else None

    def mark(self, peer: str) -> str | None:
        value = self.values.get(peer)
        return value if isinstance(value, str) else None

    def advantage(self, peer: str, others: list[str]) -> float | None:
        """How many times better `peer` is than the best of `others` (> 1: better)."""
        mine = self.median(peer)
        theirs = [m for m in (self.median(o) for o in others) if m is not None]
        if mine is None or not theirs or mine <= 0:
            return None
        if self.better == "lower":
            return min(theirs) / mine
        return mine / max(theirs)


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0-100) by the nearest-rank method."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]
