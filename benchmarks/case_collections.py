"""Case 8, collections: a strong counter increment against a no-op task's round trip, eventual
increments against strong ones, and 10,000 strong increments from 4 nodes under each executor.

    python benchmarks/case_collections.py [--quick]      (or: python benchmarks/run.py --only collections)

All on `sky.Local()`. The increment p50 is timed inside a task, one `increment()` at a time, as a
task sees it; the no-op round trip is `noop() >> pool` timed on the client, in turns with the
increments so both come from the same seconds. The rates are increments per second in one task.
The totals are the counter's value after 4 nodes (2 slots each) ran 10,000 strong increments in
40 tasks, with `executor="thread"` and with `executor="process"`: exactly 10,000 when none is lost.
Only Skyward runs it: the peers have no such collections in this benchmark.
"""

from __future__ import annotations

import statistics
import sys
import time

import cloudpickle
from common import Config, Figure

NAME = "collections"
PEERS = ("Skyward",)
TOTAL = 10_000
TURNS = 10

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def figures() -> list[Figure]:
    return [
        Figure("collections.increment_p50", "collections: strong increment p50 (us)", "us", "lower"),
        Figure("collections.noop_p50", "collections: no-op round trip p50 beside it (us)", "us", "lower"),
        Figure("collections.vs_noop", "collections: increment p50 / no-op round trip (x)", "x", "lower"),
        Figure("collections.strong_per_s", "collections: strong increments/s", "ops/s", "higher"),
        Figure("collections.eventual_per_s", "collections: eventual increments/s", "ops/s", "higher"),
        Figure("collections.eventual_vs_strong", "collections: eventual / strong rate (x)", "x", "higher"),
        Figure("collections.total_thread", "collections: 10,000 increments, 4 nodes, thread", "", "higher"),
        Figure("collections.total_process", "collections: 10,000 increments, 4 nodes, process", "", "higher"),
    ]


def timed_increments(name: str, count: int) -> list[float]:
    import skyward as sky

    counter = sky.counter(name)
    clock = time.perf_counter
    samples = []
    for _ in range(count):
        began = clock()
        counter.increment()
        samples.append(clock() - began)
    return samples


def increment_rate(name: str, count: int, consistency: str | None) -> float:
    import skyward as sky

    counter = sky.counter(name, consistency=consistency)
    began = time.perf_counter()
    for _ in range(count):
        counter.increment()
    counter.value  # noqa: B018 - an eventual counter's writes are sent before this read
    return count / (time.perf_counter() - began)


def increments(name: str, count: int) -> None:
    import skyward as sky

    counter = sky.counter(name)
    for _ in range(count):
        counter.increment()


def noop() -> None:
    return None


def measure(config: Config) -> dict[str, list[float]]:
    import skyward as sky

    runs: dict[str, list[float]] = {f.key: [] for f in figures()}
    per_turn = config.pick(1_000, 200) // TURNS
    rate_count = config.pick(20_000, 2_000)
    with sky.Compute(provider=sky.Local(), nodes=2, console=False, logging=False) as pool:
        task_noop, task_timed = sky.function(noop), sky.function(timed_increments)
        task_rate = sky.function(increment_rate)
        for _ in range(config.pick(200, 50)):
            task_noop() >> pool
        task_timed("warm", 200) >> pool
        for run in range(config.repeat):
            incs: list[float] = []
            noops: list[float] = []
            for turn in range(TURNS):
                incs += pool.run(task_timed(f"p50-{run}-{turn}", per_turn), target=0)
                for _ in range(per_turn):
                    began = time.perf_counter()
                    task_noop() >> pool
                    noops.append(time.perf_counter() - began)
            inc_p50, noop_p50 = statistics.median(incs) * 1e6, statistics.median(noops) * 1e6
            runs["collections.increment_p50"].append(inc_p50)
            runs["collections.noop_p50"].append(noop_p50)
            runs["collections.vs_noop"].append(inc_p50 / noop_p50)
            strong = pool.run(task_rate(f"strong-{run}", rate_count, None), target=0)
            eventual = pool.run(task_rate(f"eventual-{run}", rate_count * 10, "eventual"), target=0)
            runs["collections.strong_per_s"].append(strong)
            runs["collections.eventual_per_s"].append(eventual)
            runs["collections.eventual_vs_strong"].append(eventual / strong)
    for executor in ("thread", "process"):
        worker = sky.Worker(executor=executor, concurrency=2)
        with sky.Compute(provider=sky.Local(), nodes=4, worker=worker, console=False, logging=False) as pool:
            task = sky.function(increments)
            for run in range(config.repeat):
                name = f"total-{executor}-{run}"
                sky.gather(*(task(name, TOTAL // 40) for _ in range(40))) >> pool
                runs[f"collections.total_{executor}"].append(float(sky.counter(name).value))
    return runs


def main() -> int:
    config = Config(quick="--quick" in sys.argv, repeat=1 if "--quick" in sys.argv else 3)
    for key, values in measure(config).items():
        shown = ", ".join(f"{v:,.2f}" for v in values)
        print(f"{key:34} {statistics.median(values):>12,.2f}   runs: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
