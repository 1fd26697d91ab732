"""Metrics: each node's sampler measures it for real, and its figures arrive as `sky.Metric` events."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from core_support import local_pool, wait_until

import skyward as sky
from skyward.errors import ConfigurationError


@sky.function
def spin(seconds: float) -> int:
    """Keep a core busy (the sampler's CPU figure must show it); the worker's pid."""
    import os

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return os.getpid()


@sky.function
def worker_pid() -> int:
    import os

    return os.getpid()


class Recorder:
    """Collects events from any thread; `wait_for` polls until a predicate on them holds."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        with self.lock:
            self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        with self.lock:
            return [e for e in self.events if isinstance(e, kind)]

    def wait_for(self, predicate: Callable[[list[Any]], bool], timeout: float = 10.0) -> bool:
        return wait_until(lambda: predicate(self.of(sky.Metric)), timeout=timeout)


def samplers_of(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children() if "skyward.worker.sampler" in " ".join(p.cmdline())]


def test_every_node_sends_cpu_and_memory_figures_while_a_task_is_busy() -> None:
    events = Recorder()
    image = sky.Image(metrics=[sky.metrics.CPU(interval=0.2), sky.metrics.Memory(interval=0.2)])
    pool = local_pool(2, image=image, on_event=events)
    with pool:
        futures = [pool.run_async(spin(2.5), target=node) for node in (0, 1)]

        def busy_seen(metrics: list[Any]) -> bool:
            return {m.node for m in metrics if m.name == "cpu" and m.value > 20} == {0, 1}

        assert events.wait_for(busy_seen), [(m.node, m.name, m.value) for m in events.of(sky.Metric)]
        for future in futures:
            future.result()
    metrics = events.of(sky.Metric)
    for node in (0, 1):
        cpu = [m for m in metrics if m.node == node and m.name == "cpu"]
        memory = [m for m in metrics if m.node == node and m.name == "memory"]
        assert cpu and memory
        assert all(m.unit == "%" and 0 <= m.value <= 100 for m in cpu + memory)
        assert all(m.instance.node == node and m.instance.total_nodes == 2 for m in cpu + memory)
        assert all(abs(m.time - time.time()) < 60 for m in cpu)  # stamped when taken


def test_metrics_off_sends_none_and_starts_no_sampler() -> None:
    events = Recorder()
    with local_pool(1, image=sky.Image(metrics=None), on_event=events) as pool:
        pid = spin(1.0) >> pool
        assert samplers_of(pid) == []
    assert events.of(sky.Metric) == []


def test_no_sampler_runs_when_nothing_listens_for_metrics() -> None:
    with local_pool(1, image=sky.Image(metrics=[sky.metrics.CPU(interval=0.2)])) as pool:
        pid = worker_pid() >> pool
        time.sleep(0.5)
        assert samplers_of(pid) == []


def test_the_sampler_is_a_process_beside_the_worker_and_ends_with_it() -> None:
    events = Recorder()
    with local_pool(1, image=sky.Image(metrics=[sky.metrics.CPU(interval=0.2)]), on_event=events) as pool:
        pid = worker_pid() >> pool
        assert wait_until(lambda: samplers_of(pid), timeout=10)
        sampler = samplers_of(pid)[0]
    assert wait_until(lambda: not sampler.is_running() or sampler.status() == psutil.STATUS_ZOMBIE, 10)


def test_a_custom_command_metric_reports_the_last_number_it_prints() -> None:
    events = Recorder()
    custom = sky.metrics.Custom("queue_depth", "echo warming up 1; echo 42", interval=0.2, unit="jobs")
    with local_pool(1, image=sky.Image(metrics=[custom]), on_event=events) as pool:
        worker_pid() >> pool
        assert events.wait_for(lambda ms: any(m.name == "queue_depth" for m in ms))
    figure = next(m for m in events.of(sky.Metric) if m.name == "queue_depth")
    assert (figure.value, figure.unit, figure.node, figure.instance.node) == (42.0, "jobs", 0, 0)


def test_a_failing_custom_command_is_one_error_and_the_pool_goes_on() -> None:
    events = Recorder()
    broken = sky.metrics.Custom("broken", "echo nope >&2; exit 3", interval=0.1)
    with local_pool(1, image=sky.Image(metrics=[broken]), on_event=events) as pool:
        assert wait_until(lambda: events.of(sky.Error), timeout=10)
        time.sleep(0.5)  # several more failed runs: still one report
        assert spin(0.01) >> pool
    errors = events.of(sky.Error)
    assert len(errors) == 1 and not errors[0].fatal and errors[0].node == 0
    assert "broken" in errors[0].message and "status 3" in errors[0].message and "nope" in errors[0].message
    assert events.of(sky.Metric) == []


def test_a_disk_metric_names_its_path() -> None:
    events = Recorder()
    image = sky.Image(metrics=[sky.metrics.Disk("/", interval=0.2)])
    with local_pool(1, image=image, on_event=events) as pool:
        worker_pid() >> pool
        assert events.wait_for(lambda ms: any(m.name == "disk:/" for m in ms))
    disk = next(m for m in events.of(sky.Metric) if m.name == "disk:/")
    assert disk.unit == "%" and 0 < disk.value <= 100


def test_a_raising_handler_is_logged_and_the_pool_goes_on(tmp_path: Path) -> None:
    events = Recorder()
    calls: list[str] = []

    def broken(event: Any) -> None:
        calls.append(type(event).__name__)
        raise RuntimeError("handler bug")

    log = tmp_path / "skyward.log"
    image = sky.Image(metrics=[sky.metrics.CPU(interval=0.2)])
    pool = local_pool(
        2, image=image, on_event=broken, logging=sky.LogConfig(file=str(log), console=False)
    )
    pool.on(sky.Event, events)
    pool.on(sky.Metric, broken)
    with pool:
        assert sorted(spin(0.3) @ pool) == sorted(worker_pid() @ pool)
        assert events.wait_for(lambda ms: len(ms) >= 2)
    kinds = {type(e).__name__ for e in events.events}
    assert {"ClusterReady", "TaskCompleted", "Metric", "ShutdownRequested", "ClusterDestroyed"} <= kinds
    assert {"ClusterRequested", "TaskStarted", "Metric", "ClusterDestroyed"} <= set(calls)
    text = log.read_text()
    assert "skyward.event_handler_failed" in text and "handler bug" in text


@pytest.mark.parametrize(
    "metrics",
    [["cpu"], [sky.metrics.CPU(), 3], "everything"],
)
def test_image_metrics_refuses_what_is_not_a_collector(metrics: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"Image\(metrics=\.\.\.\)|Image\(metrics="):
        sky.Image(metrics=metrics)


def test_collectors_check_their_arguments() -> None:
    with pytest.raises(ConfigurationError, match="interval"):
        sky.metrics.CPU(interval=0)
    with pytest.raises(ConfigurationError, match="absolute path"):
        sky.metrics.Disk("data")
    with pytest.raises(ConfigurationError, match="name"):
        sky.metrics.Custom("", "echo 1")


def test_default_is_the_default_set_and_takes_extras_and_one_interval() -> None:
    default = sky.metrics.Default()
    assert sky.Image().metrics == "default"
    assert [c.name for c in default] == [
        "cpu", "memory", "gpu_utilization", "gpu_memory", "gpu_memory_total", "gpu_temp",
    ]
    tuned = sky.metrics.Default(sky.metrics.Disk("/data"), interval=5)
    assert [c.name for c in tuned][-1] == "disk:/data"
    assert {c.interval for c in tuned} == {5.0}
    assert sky.Image(metrics=tuned).metrics == tuned


def test_a_node_whose_psutil_does_not_load_reports_it_and_still_runs_custom_metrics(tmp_path: Path) -> None:
    broken = tmp_path / "site"
    broken.mkdir()
    (broken / "psutil.py").write_text("raise ImportError('no psutil on this node')\n")
    events = Recorder()
    metrics = [sky.metrics.CPU(interval=0.2), sky.metrics.Custom("answer", "echo 42", interval=0.2)]
    image = sky.Image(metrics=metrics, includes=[str(broken / "psutil.py")])
    with local_pool(1, image=image, on_event=events) as pool:
        worker_pid() >> pool
        assert events.wait_for(lambda ms: any(m.name == "answer" for m in ms))
        assert wait_until(lambda: events.of(sky.Error), timeout=20)  # a bound, for a loaded machine
    errors = events.of(sky.Error)
    assert len(errors) == 1 and "'cpu'" in errors[0].message and "no psutil on this node" in errors[0].message
    assert {m.name for m in events.of(sky.Metric)} == {"answer"}
