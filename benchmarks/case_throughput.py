"""Case 3, throughput: 10,000 no-op tasks submitted at once on a warm pool of 2 (Skyward's
`pool.map`, Ray's `remote` for each then `get`, Dask's `client.map` + `gather`, the executors' `map`)."""

from __future__ import annotations

import time

from bench_tasks import noop
from common import Config, Figure

NAME = "throughput"


def figures() -> list[Figure]:
    return [Figure("throughput.tasks_per_s", "throughput: no-op tasks/s", "tasks/s", "higher")]


def warm_up(peer, config: Config) -> None:
    peer.map(noop, range(200))


def measure(peer, config: Config) -> dict[str, float]:
    count = config.pick(10_000, 2_000)
    began = time.perf_counter()
    results = peer.map(noop, range(count))
    elapsed = time.perf_counter() - began
    assert list(results) == list(range(count)), "map returned the wrong results"
    return {"throughput.tasks_per_s": count / elapsed}
