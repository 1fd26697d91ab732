"""Readable durations: ``sky.time.minutes(10)`` instead of a bare ``600``.

Every timeout in Skyward (``Spec.ttl``, ``Options.*_timeout``, ``@sky.function(timeout=...)``) is
expressed in seconds; these helpers only exist so call sites say what they mean. They return
``float`` so fractions compose (``hours(1.5)``) and results can be added together.
"""

from __future__ import annotations

__all__ = ["days", "hours", "minutes", "seconds"]


def seconds(n: float) -> float:
    """``n`` seconds, as float seconds (for symmetry with the other helpers)."""
    return float(n)


def minutes(n: float) -> float:
    """``n`` minutes, in seconds."""
    return float(n) * 60.0


def hours(n: float) -> float:
    """``n`` hours, in seconds."""
    return float(n) * 3_600.0


def days(n: float) -> float:
    """``n`` days, in seconds."""
    return float(n) * 86_400.0
