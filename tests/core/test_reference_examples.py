"""The examples of the reference (cheat sheet, llms-full reference) and of core-concepts.md, run as
written on `sky.Local()`.

The only edits to each example: `provider=sky.Local()` instead of a cloud, `console=False` where
the example leaves the console to its default (quiet test output), and tiny stand-in bodies for
the user code the documents leave undefined (`model.fit`, `load_model`, ...). Each test names the
section it comes from; a failure here means the documents promise something Skyward does not do.
"""

from __future__ import annotations

import re
import sys
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

import skyward as sky

# Tasks defined in this module travel by value: the worker processes cannot import the test module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# --- stand-ins for the user code the documents leave undefined ---------------------------------------


class _Model:
    """`model.fit(data)`: a mean, so results are easy to check."""

    @staticmethod
    def fit(data: object, labels: object = None) -> float:
        values = list(np.asarray(data).ravel())
        return float(sum(values) / len(values)) if values else 0.0

    @staticmethod
    def evaluate() -> float:
        return 0.5


model = _Model()
data = [1, 2, 3, 4]


def fit(x: object, y: object) -> tuple[int, int]:
    return len(x), len(y)  # type: ignore[arg-type]


def compute(batch: list[int]) -> int:
    return sum(batch)


# --- Cheat sheet --------------------------------------------------------------------------------------


def test_cheat_sheet() -> None:
    @sky.function
    def work(x):
        return x * 2

    with sky.Compute(
        provider=sky.Local(), accelerator=sky.accelerators.A100(), nodes=4, console=False
    ) as pool:
        a = work(10) >> pool  # one node (round-robin) -> T
        everyone = work(10) @ pool  # broadcast to ALL nodes -> list[T]
        x, y = (work(1) & work(2)) >> pool  # parallel group -> tuple
        fut = work(10) > pool  # async, non-blocking -> Future[T]
        val = fut.result()
        results = pool.map(work, [1, 2, 3, 4])  # one task per item, ordered -> list[R]
        n = pool.current_nodes()  # ready node count

    assert a == 20
    assert everyone == [20, 20, 20, 20]
    assert (x, y) == (2, 4)
    assert isinstance(fut, Future)
    assert val == 20
    assert results == [2, 4, 6, 8]
    assert n == 4


def test_operator_table_targets_pool_sky_and_skyward_module() -> None:
    """ "`pool` may be a pool object, the `sky` singleton, or the `skyward` module"."""
    import skyward

    @sky.function
    def task():
        return sky.instance_info().node

    with sky.Compute(provider=sky.Local(), nodes=2, console=False) as pool:
        assert (task() >> pool) in (0, 1)
        assert (task() >> sky) in (0, 1)
        assert (task() @ skyward) == [0, 1]
        assert (task() > sky).result() in (0, 1)
        # the table writes `task1() & task2() >> pool`; `>>` binds tighter than `&` in Python,
        # so the group must be parenthesised (as every code example does)
        assert sorted((task() & task()) >> pool) == [0, 1]


def test_dispatch_operators_section() -> None:
    @sky.function
    def train(data):
        return model.fit(data)

    @sky.function
    def task1():
        return 1

    @sky.function
    def task2():
        return "two"

    with sky.Compute(provider=sky.Local(), nodes=2, console=False) as pool:
        result = train(data) >> pool
        future = train(data) > pool
        results = train(data) @ pool
        group = task1() & task2()
        a, b = group >> pool
        on_head = pool.run(train(data), target="head")
        on_one = pool.run(train(data), target=1)
        parallel = pool.run_parallel(group)
        everywhere = pool.broadcast(train(data))
        later = pool.run_async(train(data))
        mapped = pool.map(lambda v: v + 1, [1, 2, 3])  # fn need not be decorated
        # a future is read inside the block, as the reference's cheat sheet does: leaving the block
        # interrupts what still runs (tests/core/test_shutdown.py)
        async_results = (future.result(), later.result())

    assert result == 2.5 and async_results == (2.5, 2.5) and results == [2.5, 2.5]
    assert (a, b) == (1, "two") and parallel == (1, "two")
    assert on_head == on_one == 2.5 and everywhere == [2.5, 2.5]
    assert mapped == [2, 3, 4]


def test_gather_section() -> None:
    @sky.function
    def a():
        return "a"

    @sky.function
    def b():
        time.sleep(0.3)
        return "b"

    @sky.function
    def c():
        return "c"

    with sky.Compute(provider=sky.Local(), nodes=2, console=False) as pool:
        results = sky.gather(a(), b(), c()) >> pool  # tuple, all at once
        streamed = []
        for r in sky.gather(a(), b(), stream=True) >> pool:  # generator, as each completes
            streamed.append(r)
        unordered = list(sky.gather(b(), a(), stream=True, ordered=False) >> pool)

    assert results == ("a", "b", "c")
    assert streamed == ["a", "b"]
    assert unordered == ["a", "b"]  # a finished first, though submitted second


# --- Defining work: @sky.function, timeouts, sky.time -------------------------------------------------


def test_function_timeouts_and_sky_time() -> None:
    @sky.function
    def train(data):
        return model.fit(data)

    @sky.function(timeout=600)  # per-call wall-clock timeout in seconds
    def long_train(data):
        return model.fit(data)

    @sky.function(timeout=0.5)
    def too_slow():
        time.sleep(5)

    assert (sky.time.minutes(10), sky.time.hours(2), sky.time.days(1)) == (600.0, 7200.0, 86400.0)
    assert train(data).with_timeout(sky.time.minutes(10)).timeout == 600
    assert long_train(data).timeout == 600

    with sky.Compute(provider=sky.Local(), ttl=sky.time.minutes(10), console=False) as pool:
        assert pool.spec.ttl == 600
        assert (train(data).with_timeout(600) >> pool) == 2.5
        assert (long_train(data) >> pool) == 2.5
        with pytest.raises(TimeoutError):
            too_slow() >> pool


# --- core-concepts: @sky.compute, PendingCompute, .local ---------------------------------------------


def test_compute_decorator_is_lazy_and_returns_pending_compute() -> None:
    @sky.compute
    def train(data: list[int]) -> float:
        return sum(data) / len(data)

    # Calling train() returns PendingCompute[float], not float
    pending = train([1, 2, 3, 4])
    assert isinstance(pending, sky.PendingCompute)  # the document prints <class 'PendingCompute'>;
    assert type(pending) is sky.PendingFunction  # the class is named PendingFunction today

    # Execution happens when sent to a pool
    with sky.ComputePool(provider=sky.Local(), console=False) as pool:
        result = pending >> pool  # Now it executes, returns 2.5
    assert result == 2.5


def test_local_execution() -> None:
    @sky.compute
    def process(x: int) -> int:
        return x * 2

    # Local execution (bypasses serialization)
    result = process.local(10)  # Returns 20 directly
    assert result == 20


def test_pending_compute_properties() -> None:
    @sky.compute
    def add(a: int, b: int) -> int:
        return a + b

    pending: sky.PendingCompute[int] = add(1, 2)
    assert sky.PendingCompute[int] is not None  # generic: subscriptable at run time too

    # Immutable: a frozen dataclass
    with pytest.raises(AttributeError):
        pending.args = (3, 4)  # type: ignore[misc]
    # Serializable: shipped with cloudpickle (plain `pickle` cannot: the module attribute `add` is
    # the decorated object, not the function the pending holds)
    restored = cloudpickle.loads(cloudpickle.dumps(pending))
    assert restored.local() == 3
    assert pending.local() == 3


# --- core-concepts: @sky.pool and >> sky / @ sky / & / gather ---------------------------------------


def test_pool_decorator() -> None:
    @sky.compute
    def train(data):
        return model.fit(data)

    @sky.pool(provider=sky.Local(), accelerator="A100", nodes=4, console=False)
    def main():
        result = train(data) >> sky
        return result

    assert main() == 2.5  # provisions -> executes -> terminates
    with pytest.raises(sky.NoActivePoolError):
        train(data) >> sky  # the pool is gone once main() returned


def test_implicit_execution_with_sky() -> None:
    @sky.compute
    def train(x):
        return x + 1

    @sky.compute
    def init():
        return sky.instance_info().node

    @sky.compute
    def fn1():
        return 1

    @sky.compute
    def fn2():
        return 2.0

    @sky.pool(provider=sky.Local(), accelerator="T4", nodes=2, console=False)
    def main():
        result = train(41) >> sky  # Execute on one worker
        all_results = init() @ sky  # Broadcast to all nodes
        a, b = (fn1() & fn2()) >> sky  # Parallel execution
        return result, all_results, a, b

    assert main() == (42, [0, 1], 1, 2.0)


def test_broadcast_on_four_nodes() -> None:
    @sky.compute
    def my_function(x):
        return x * 10

    @sky.compute
    def load_model(path):
        return f"{path}@{sky.instance_info().node}"

    @sky.pool(provider=sky.Local(), nodes=4, console=False)
    def main():
        # With 4 nodes, returns 4 results (a list, one per node in node order)
        results = my_function(3) @ sky
        # Useful for initialization
        models = load_model("model.pt") @ sky  # Load on all nodes
        return results, models

    results, models = main()
    assert results == [30, 30, 30, 30]
    assert models == ["model.pt@0", "model.pt@1", "model.pt@2", "model.pt@3"]


def test_parallel_chain_of_three_and_five() -> None:
    @sky.compute
    def fn1() -> int:
        return 1

    @sky.compute
    def fn2() -> float:
        return 2.5

    @sky.compute
    def fn3() -> str:
        return "three"

    @sky.compute
    def f(i: int) -> int:
        return i * i

    @sky.pool(provider=sky.Local(), nodes=2, console=False)
    def main():
        a: int
        b: float
        c: str
        a, b, c = (fn1() & fn2() & fn3()) >> sky
        # Supports up to 8 chained computations
        r1, r2, r3, r4, r5 = (f(1) & f(2) & f(3) & f(4) & f(5)) >> sky
        return (a, b, c), (r1, r2, r3, r4, r5)

    assert main() == ((1, 2.5, "three"), (1, 4, 9, 16, 25))


def test_gather_dynamic_parallel() -> None:
    @sky.compute
    def fn(i):
        return i * 100

    @sky.compute
    def process(x):
        return x.upper()

    data = ["a", "b", "c", "d", "e"]

    @sky.pool(provider=sky.Local(), nodes=2, console=False)
    def main():
        # Fixed number
        r1, r2, r3 = sky.gather(fn(1), fn(2), fn(3)) >> sky
        # Dynamic (e.g., from list comprehension)
        results = sky.gather(*[process(x) for x in data]) >> sky
        return (r1, r2, r3), results

    assert main() == ((100, 200, 300), ("A", "B", "C", "D", "E"))


# --- core-concepts: ComputePool, Image, allocation, MultiPool ----------------------------------------


def test_ephemeral_compute_pool_with_image() -> None:
    @sky.compute
    def train_llm(dataset):
        import numpy  # installed by the image (already here on Local)

        return float(numpy.mean(dataset))

    dataset = [1.0, 2.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Local warns when an image package is missing here
        with sky.ComputePool(
            provider=sky.Local(),
            accelerator="A100",
            nodes=4,
            image=sky.Image(pip=["numpy"]),
            console=False,
        ) as pool:
            # 4x "A100" instances appear, configured and ready
            metrics = train_llm(dataset) >> pool
            nodes = pool.current_nodes()
            gpu = pool.spec.accelerator.name
    assert metrics == 2.0
    assert nodes == 4 and gpu == "A100"


def test_compute_pool_key_parameters() -> None:
    @sky.compute
    def my_function():
        info = sky.instance_info()
        return info.total_nodes, info.gpu_model

    pool = sky.ComputePool(
        provider=sky.Local(),  # Cloud provider
        nodes=2,  # Number of instances
        accelerator="A100",  # GPU type
        image=sky.Image(pip=["numpy"]),  # Dependencies
        allocation="always-spot",  # Use spot instances
        timeout=3600,  # Auto-shutdown after 1 hour
        display="quiet",
    )
    assert pool.specs[0].allocation == "spot" and pool.specs[0].ttl == 3600
    with pool:
        result = my_function() >> pool
    assert result == (2, "A100")


def test_each_experiment_gets_what_it_needs() -> None:
    # No provider: the embedded Local provider.
    cheap = sky.ComputePool(accelerator="T4")  # Cheap prototyping
    serious = sky.ComputePool(accelerator="A100", nodes=4)  # Serious training
    scale = sky.ComputePool(accelerator="H100", nodes=8)  # Scale out
    assert [p.specs[0].accelerator.name for p in (cheap, serious, scale)] == ["T4", "A100", "H100"]
    assert [p.specs[0].nodes.desired for p in (cheap, serious, scale)] == [1, 4, 8]


def test_image_section() -> None:
    image = sky.Image(
        python="3.13",  # Python version
        pip=["torch", "numpy"],  # pip packages
        apt=["ffmpeg", "libsndfile1"],  # apt packages
        env={"KERAS_BACKEND": "jax"},  # Environment variables
    )
    pool = sky.ComputePool(provider=sky.Local(), image=image)
    assert pool.specs[0].image.env["KERAS_BACKEND"] == "jax"

    @sky.compute
    def read_env():
        import os

        return os.environ.get("KERAS_BACKEND")

    with sky.ComputePool(
        provider=sky.Local(), image=sky.Image(env={"KERAS_BACKEND": "jax"}), console=False
    ) as p:
        assert (read_env() >> p) == "jax"


@pytest.mark.parametrize("allocation", ["spot-if-available", "spot", "always-spot", "on-demand", "cheapest"])
def test_allocation_strategies(allocation: str) -> None:
    @sky.compute
    def one():
        return 1

    with sky.ComputePool(provider=sky.Local(), allocation=allocation, console=False) as pool:
        assert (one() >> pool) == 1


def test_multi_pool() -> None:
    @sky.compute
    def benchmark():
        return sky.instance_info().gpu_model

    with sky.MultiPool(
        sky.ComputePool(provider=sky.Local(), accelerator="T4", console=False),
        sky.ComputePool(provider=sky.Local(), accelerator="A100", console=False),
    ) as (t4_pool, a100_pool):
        # Pools provisioned in parallel
        result_t4 = benchmark() >> t4_pool
        result_a100 = benchmark() >> a100_pool
    assert (result_t4, result_a100) == ("T4", "A100")


def test_multi_provider_fallback_with_specs() -> None:
    @sky.function
    def train(data):
        return model.fit(data), sky.instance_info().gpu_model

    with sky.Compute(
        sky.Spec(provider=sky.Local(), accelerator=sky.accelerators.A100()),
        sky.Spec(provider=sky.Local(), accelerator=sky.accelerators.H100()),
        options=sky.Options(selection="first", console=False),
    ) as pool:
        result = train(data) >> pool
    assert result == (2.5, "A100")  # "first" tries the specs in order

    with sky.Compute(
        sky.Spec(provider=sky.Local(), accelerator=sky.accelerators.A100()),
        sky.Spec(provider=sky.Local(), accelerator=sky.accelerators.A100()),
        options=sky.Options(selection="cheapest"),
        console=False,
    ) as pool:
        assert (train(data) >> pool) == (2.5, "A100")


def test_named_pool_from_skyward_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "skyward.toml").write_text(
        "[defaults.options]\n"
        "console = false\n"
        "\n"
        "[pools.train]\n"
        'provider = "local"\n'
        'accelerator = "A100"\n'
        "nodes = 2\n"
        "\n"
        "[pools.train.options]\n"
        "worker = { concurrency = 2 }\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SKYWARD_CONFIG", raising=False)

    @sky.function
    def train(data):
        info = sky.instance_info()
        return model.fit(data), info.total_nodes, info.gpu_model

    with sky.Compute(name="train") as pool:
        result = train(data) >> pool
        concurrency = pool.worker.concurrency
    assert result == (2.5, 2, "A100")
    assert concurrency == 2


# --- Node topology -----------------------------------------------------------------------------------


def test_elastic_nodes_tuple() -> None:
    @sky.function
    def node():
        return sky.instance_info().node

    with sky.Compute(provider=sky.Local(), nodes=(2, 4), console=False) as pool:  # start 2, up to 4
        assert pool.spec.nodes == sky.Nodes(desired=2, max=4)
        assert pool.current_nodes() == 2
        assert (node() @ pool) == [0, 1]


def test_partial_readiness_nodes() -> None:
    @sky.function
    def train(data):
        return model.fit(data)

    with sky.Compute(provider=sky.Local(), nodes=sky.Nodes(desired=2, min=1), console=False) as pool:
        assert pool.current_nodes() >= 1  # usable at `min`
        results = train(data) @ pool  # starts on the ready node(s), broadcasts as more join
        assert results == [2.5, 2.5]
        assert pool.current_nodes() == 2


# --- Runtime API: instance_info, is_head, output control ---------------------------------------------


def test_cluster_information_worker_role() -> None:
    @sky.compute
    def worker_role() -> str:
        info: sky.InstanceInfo = sky.instance_info()

        if info.is_head:
            return "I am the head node"
        else:
            return f"I am worker {info.node} of {info.total_nodes}"

    with sky.ComputePool(provider=sky.Local(), nodes=3, console=False) as pool:
        roles = worker_role() @ pool
    assert roles == ["I am the head node", "I am worker 1 of 3", "I am worker 2 of 3"]


def test_instance_info_printout_and_fields() -> None:
    @sky.compute
    def show() -> dict:
        info = sky.instance_info()
        print(f"Node {info.node} of {info.total_nodes}")
        print(f"Is head: {info.is_head}")
        print(f"Head address: {info.head_addr}:{info.head_port}")
        return {
            "worker": info.worker,
            "workers_per_node": info.workers_per_node,
            "global": info.global_worker_index,
            "total_workers": info.total_workers,
            "peers": [p.node for p in info.peers],
            "job_id": info.job_id,
            "accelerator": info.accelerator.type if info.accelerator else None,
            "hostname": bool(info.hostname),
            "network": info.network.interface,
        }

    logs: list[str] = []
    with sky.Compute(
        provider=sky.Local(),
        nodes=2,
        accelerator=sky.accelerators.A100(),
        console=False,
        on_event=lambda e: logs.append(f"{e.node}|{e.line}") if isinstance(e, sky.Log) else None,
    ) as pool:
        rows = show() @ pool
        name = pool.name
    assert [r["global"] for r in rows] == [0, 1]
    assert all(r["worker"] == 0 and r["workers_per_node"] == 1 and r["total_workers"] == 2 for r in rows)
    assert all(r["peers"] == [0, 1] and r["job_id"] == name and r["accelerator"] == "A100" for r in rows)
    assert all(r["hostname"] and r["network"] for r in rows)
    assert "0|Node 0 of 2" in logs and "1|Is head: False" in logs
    assert any(re.fullmatch(r"0\|Head address: 127\.0\.0\.1:\d+", line) for line in logs)


def test_step_prints_on_head_only() -> None:
    @sky.function
    def step(batch):
        info = sky.instance_info()
        if sky.is_head(info):
            print(f"node {info.node}/{info.total_nodes}")
        return compute(batch)

    logs: list[tuple[int, str]] = []
    with sky.Compute(
        provider=sky.Local(),
        nodes=2,
        console=False,
        on_event=lambda e: logs.append((e.node, e.line)) if isinstance(e, sky.Log) else None,
    ) as pool:
        assert (step([1, 2, 3]) @ pool) == [6, 6]
    assert logs == [(0, "node 0/2")]


def _log_collector() -> tuple[list[tuple[int, str]], object]:
    seen: list[tuple[int, str]] = []

    def on_event(event: sky.Event) -> None:
        if isinstance(event, sky.Log):
            seen.append((event.node, event.line))

    return seen, on_event


def test_stdout_only_head_above_sky_function() -> None:
    @sky.stdout(only="head")  # decorator FACTORY - call with only=
    @sky.function
    def train(data):
        print("only the head node prints this")  # other nodes' stdout is suppressed
        return model.fit(data)

    seen, on_event = _log_collector()
    with sky.Compute(provider=sky.Local(), nodes=2, console=False, on_event=on_event) as pool:
        assert (train(data) @ pool) == [2.5, 2.5]
    assert seen == [(0, "only the head node prints this")]


def test_stdout_only_predicate_and_silent() -> None:
    @sky.stdout(only=lambda i: i.node < 2)  # only nodes 0 and 1 print
    @sky.function
    def task():
        print("hi from", sky.instance_info().node)

    @sky.silent
    @sky.function
    def quiet():
        print("never seen")
        print("nor this", file=sys.stderr)
        return "done"

    seen, on_event = _log_collector()
    with sky.Compute(provider=sky.Local(), nodes=3, console=False, on_event=on_event) as pool:
        task() @ pool
        assert (quiet() @ pool) == ["done", "done", "done"]
    assert sorted(seen) == [(0, "hi from 0"), (1, "hi from 1")]


def test_redirect_output() -> None:
    lines: list[str] = []
    with sky.redirect_output(lines.append):
        print("captured")
    assert lines == ["captured"]


# --- Data sharding -----------------------------------------------------------------------------------


def test_shard_process_data_on_four_nodes() -> None:
    @sky.compute
    def process_data(full_dataset: list[int]) -> int:
        # shard() returns only this worker's portion
        local_data = sky.shard(full_dataset)
        return sum(local_data)

    with sky.ComputePool(provider=sky.Local(), nodes=4, console=False) as pool:
        # Each node processes 1/4 of the data
        results = process_data(list(range(1000))) @ pool
        total = sum(results)
    assert len(results) == 4
    assert total == sum(range(1000))


def test_shard_multiple_arrays_and_train_shard() -> None:
    @sky.compute
    def train(x_full, y_full):
        x_local, y_local = sky.shard(x_full, y_full, shuffle=True, seed=42)
        # x_local and y_local have matching indices
        assert (y_local == 10 * x_local).all()
        return fit(x_local, y_local), sorted(int(v) for v in x_local)

    @sky.function
    def train_shard(dataset):
        my_part = sky.shard(dataset, shuffle=True, seed=42)  # same type as dataset, this node's slice
        return type(my_part).__name__, sorted(my_part)

    @sky.function
    def aligned(x_train, y_train, drop_last):
        x_shard, y_shard = sky.shard(x_train, y_train, drop_last=drop_last)  # aligned slices
        return list(x_shard), list(y_shard)

    x = np.arange(11)
    y = 10 * x
    full_dataset = list(range(11))
    with sky.Compute(provider=sky.Local(), nodes=2, console=False) as pool:
        fitted = train(x, y) @ pool
        shards = train_shard(full_dataset) @ pool  # broadcast: each node trains its own shard
        kept = aligned(x, y, False) @ pool
        dropped = aligned(x, y, True) @ pool

    assert [f[0] for f in fitted] in ([(6, 6), (5, 5)], [(5, 5), (6, 6)])
    assert sorted(fitted[0][1] + fitted[1][1]) == list(range(11))
    assert {s[0] for s in shards} == {"list"}
    assert sorted(shards[0][1] + shards[1][1]) == full_dataset
    assert not set(shards[0][1]) & set(shards[1][1])
    assert [len(xs) for xs, _ in kept] == [6, 5]
    assert all([10 * v for v in xs] == ys for xs, ys in kept)
    assert [len(xs) for xs, _ in dropped] == [5, 5]  # drop_last trims the tail: equal counts


def test_distributed_sampler_with_a_dataloader() -> None:
    pytest.importorskip("torch")

    @sky.compute
    def train(epochs: int):
        from torch.utils.data import DataLoader

        dataset = list(range(10))
        sampler = sky.DistributedSampler(dataset, shuffle=True)
        loader = DataLoader(dataset, sampler=sampler)
        seen = []
        for epoch in range(epochs):
            sampler.set_epoch(epoch)  # Important for shuffling
            seen.append(sorted(int(batch) for batch in loader))
        return seen

    with sky.Compute(provider=sky.Local(), nodes=2, console=False) as pool:
        per_node = train(2) @ pool
    for epoch in range(2):
        assert sorted(per_node[0][epoch] + per_node[1][epoch]) == list(range(10))


# --- Events and callbacks ----------------------------------------------------------------------------


def test_event_handlers_registered_before_entering(capsys: pytest.CaptureFixture[str]) -> None:
    @sky.compute
    def train():
        return "trained"

    metrics: list[sky.Metric] = []

    def my_metrics_handler(event):
        metrics.append(event)

    completed: list[sky.TaskCompleted] = []

    # Event handlers need pool.on() before entering context. (The document writes `sky.Metrics`;
    # the event class is `sky.Metric`.)
    pool = sky.ComputePool(provider=sky.Local(), console=False)
    pool.on(sky.Metric, my_metrics_handler)  # Register before entering
    pool.on(sky.TaskCompleted, completed.append)

    with pool:
        result = train() >> pool
    assert result == "trained"
    assert [(e.name, e.success) for e in completed] == [("train", True)]
    assert all(isinstance(m, sky.Metric) for m in metrics)  # Local collects no telemetry


def test_on_event_callback_with_match(capsys: pytest.CaptureFixture[str]) -> None:
    def my_callback(event):
        match event:
            case sky.Metric(name=name, value=value):
                print(f"{name}: {value}")
            case sky.Log(line=line):
                print(f"[remote] {line}")
            case sky.TaskCompleted(success=True, duration=d):
                print(f"Task completed in {d:.2f}s")

    @sky.compute
    def train():
        print("epoch 1 done")
        return 1

    pool = sky.ComputePool(
        provider=sky.Local(),
        on_event=my_callback,
        console=False,
    )
    with pool:
        assert (train() >> pool) == 1
    out = capsys.readouterr().out
    assert "[remote] epoch 1 done" in out.splitlines()
    assert re.search(r"^Task completed in \d+\.\d\ds$", out, re.M)


def test_on_event_handler_with_instance(capsys: pytest.CaptureFixture[str]) -> None:
    def my_handler(event):
        match event:
            case sky.Metric(instance=inst, name="gpu_utilization", value=v):
                print(f"Node {inst.node} GPU: {v}%")
            case sky.Log(instance=inst, line=line):
                print(f"[node-{inst.node}] {line}")
            case sky.BootstrapPhase(phase=p, event="completed"):
                print(f"Bootstrap phase '{p}' completed")

    @sky.compute
    def train():
        print("hello", sky.instance_info().node)

    with sky.ComputePool(provider=sky.Local(), nodes=2, on_event=my_handler, console=False) as pool:
        train() @ pool
    out = capsys.readouterr().out.splitlines()
    assert "[node-0] hello 0" in out and "[node-1] hello 1" in out


# --- Options -----------------------------------------------------------------------------------------


def test_worker_concurrency_and_log_console(capsys: pytest.CaptureFixture[str]) -> None:
    @sky.function
    def nap(i):
        started = time.time()
        time.sleep(0.5)
        return i, started, time.time()

    with sky.Compute(
        provider=sky.Local(),
        options=sky.Options(worker=sky.Worker(concurrency=2), console="log"),
    ) as pool:
        results = pool.map(nap, [1, 2])  # both run at once on the single node
    assert [r[0] for r in results] == [1, 2]
    (_, start1, end1), (_, start2, end2) = results
    assert start2 < end1 and start1 < end2, results  # the two naps overlapped
    err = capsys.readouterr().err
    # plain append-only `HH:MM:SS LEVEL message` lines
    assert re.search(r"^\d\d:\d\d:\d\d INFO  pool ready: 1 node\(s\)", err, re.M), err
    # tasks are counted, not narrated line by line: the end summary says how many ran
    assert not re.search(r"task nap#\d+ done", err), err
    assert re.search(r"^\d\d:\d\d:\d\d INFO  tasks: 2 done, 0 failed", err, re.M), err


def test_pool_options_example() -> None:
    opts = sky.Options(
        selection="cheapest",
        worker=sky.Worker(concurrency=4),
        provision_timeout=600,
        retry_on_interruption=5,
        console="silent",
    )

    @sky.function
    def where():
        return sky.instance_info().node

    with sky.Compute(provider=sky.Local(), nodes=2, options=opts) as pool:
        assert sorted(sky.gather(*[where() for _ in range(8)]) >> pool) == [0] * 4 + [1] * 4


# --- Streaming (generators and iterator arguments) ---------------------------------------------------


def test_generator_and_iterator_arguments() -> None:
    @sky.function
    def squares(n):
        for i in range(n):
            yield i * i

    @sky.function
    def total(xs: Iterator[int]) -> int:
        return sum(xs)

    with sky.Compute(provider=sky.Local(), nodes=2, console=False) as pool:
        assert list(squares(4) >> pool) == [0, 1, 4, 9]
        assert (total(iter(range(101))) >> pool) == 5050


@sky.function
def _double(x: int) -> int:
    return x * 2


def test_pending_call_survives_plain_pickle() -> None:
    import pickle

    pending = pickle.loads(pickle.dumps(_double(21)))
    assert pending.local() == 42


def test_older_metrics_name_is_an_alias() -> None:
    assert sky.Metrics is sky.Metric


def test_cheapest_selection_starts_the_lowest_priced_spec() -> None:
    import attrs

    @attrs.frozen
    class Pricey(sky.Local):
        def hourly_price(self, spec: object) -> float:
            return 5.0

    @sky.function
    def provider_name() -> str:
        return sky.instance_info().instance_type

    with sky.Compute(
        sky.Spec(provider=Pricey(), nodes=1),
        sky.Spec(provider=sky.Local(), nodes=2),
        options=sky.Options(selection="cheapest", console=False),
    ) as pool:
        assert pool.current_nodes() == 2


def test_a_provider_that_cannot_price_goes_last_and_the_pool_still_starts() -> None:
    import attrs

    @attrs.frozen
    class Unpriceable(sky.Local):
        def hourly_price(self, spec: object) -> float:
            raise ConnectionError("the price API is down")

    @attrs.frozen
    class Priced(sky.Local):
        def hourly_price(self, spec: object) -> float:
            return 9.0

    with sky.Compute(
        sky.Spec(provider=Unpriceable(), nodes=1),
        sky.Spec(provider=Priced(), nodes=2),
        options=sky.Options(selection="cheapest", console=False),
    ) as pool:
        assert pool.current_nodes() == 2


def test_a_single_spec_is_not_priced() -> None:
    import threading

    import attrs

    asked = threading.Event()

    @attrs.frozen
    class Slow(sky.Local):
        def hourly_price(self, spec: object) -> float:
            asked.set()  # a real cloud would search its market here, for nothing
            return 1.0

    with sky.Compute(provider=Slow(), nodes=1, options=sky.Options(selection="cheapest", console=False)):
        pass
    assert not asked.is_set()


def test_local_warns_that_it_does_not_mount_volumes() -> None:
    import pytest

    with pytest.warns(UserWarning, match="does not mount volumes"), sky.Compute(
        provider=sky.Local(), volumes=[sky.Volume(bucket="b", mount="/data")], console=False
    ):
        pass
