"""Case 2, latency: sequential no-op round trips on a warm pool of 2, p50 and p99."""

from __future__ import annotations

import time

from bench_tasks import noop
from common import Config, Figure, percentile

NAME = "latency"


def figures() -> list[Figure]:
    return [
        Figure("latency.p50", "latency: no-op round trip p50 (us)", "us", "lower"),
        Figure("latency.p99", "latency: no-op round trip p99 (us)", "us", "lower"),
    ]


def warm_up(peer, config: Config) -> None:
    for _ in range(config.pick(100, 20)):
        peer.call(noop)


def measure(peer, config: Config) -> dict[str, float]:
    samples = []
    clock = time.perf_counter
    for _ in range(config.pick(1000, 200)):
        began = clock()
        peer.call(noop)
        samples.append(clock() - began)
    return {"latency.p50": percentile(samples, 50) * 1e6, "latency.p99": percentile(samples, 99) * 1e6}
