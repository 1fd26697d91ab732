"""Case 1, start: a fresh pool of 2 and of 4 workers until its first no-op result, and its shutdown.

Every repetition starts from nothing in this process (a new Skyward pool, `ray.init`, a new
`LocalCluster` + `Client`, a new loky or standard executor).
"""

from __future__ import annotations

import time

from common import Config, Figure

NAME = "start"
SIZES = (2, 4)


def figures() -> list[Figure]:
    rows = []
    for n in SIZES:
        rows.append(Figure(f"start.pool{n}", f"start: pool of {n} ready (ms)", "ms", "lower"))
        rows.append(Figure(f"start.shutdown{n}", f"start: pool of {n} shutdown (ms)", "ms", "lower"))
    return rows


def measure(peer_class: type, config: Config) -> dict[str, float]:
    """One repetition for one framework: start and stop each pool size once."""
    out = {}
    for n in SIZES:
        peer = peer_class()
        began = time.perf_counter()
        peer.start(n)
        ready = time.perf_counter()
        peer.stop()
        stopped = time.perf_counter()
        out[f"start.pool{n}"] = (ready - began) * 1e3
        out[f"start.shutdown{n}"] = (stopped - ready) * 1e3
    return out
