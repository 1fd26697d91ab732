"""The order of a pool's events, as docs/observability.md states it, checked on a recorded stream.

Shared by the event-order tests of each provider family (Local, SSH, a cloud fake). A pool there
runs `lifecycle_workload`: a task on every node that prints a line and keeps a core busy while the
node's sampler takes figures, with a `Custom` metric whose command fails, so `Log`, `Metric` and
`Error` all happen between `ClusterReady` and `ShutdownRequested`.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import cloudpickle

import skyward as sky

cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: Per node, for a cloud: the machine is launched and running before it is provisioned.
CLOUD_NODE = (
    sky.InstanceRequested, sky.InstanceLaunched, sky.InstanceRunning, sky.InstanceProvisioned,
    sky.BootstrapRequested, sky.BootstrapPhase, sky.InstanceBootstrapped, sky.NodeReady,
)
#: Per node, for Local and SSH: the machine is there; launched and running are its worker's start.
WORKER_NODE = (
    sky.InstanceRequested, sky.InstanceProvisioned, sky.BootstrapRequested, sky.BootstrapPhase,
    sky.InstanceLaunched, sky.InstanceRunning, sky.InstanceBootstrapped, sky.NodeReady,
)
#: Every kind of event the reference documents, bootstrap stream included.
EVERY_KIND = {
    *CLOUD_NODE, sky.ClusterRequested, sky.ClusterProvisioned, sky.ClusterReady, sky.TaskStarted,
    sky.TaskCompleted, sky.ShutdownRequested, sky.InstanceDestroyed, sky.ClusterDestroyed, sky.Metric,
    sky.Log, sky.Error, sky.BootstrapCommand, sky.BootstrapConsole,
}

IMAGE_METRICS = [
    sky.metrics.CPU(interval=0.2),
    sky.metrics.Memory(interval=0.2),
    sky.metrics.Custom("broken", "exit 3", interval=0.2),
]


@sky.function
def busy(seconds: float) -> int:
    print(f"busy on node {sky.instance_info().node}")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return sky.instance_info().node


def lifecycle_workload(pool: Any, nodes: int) -> None:
    """Run a busy task on every node until each has sent a CPU figure (at most 10 s)."""
    seen: set[int] = set()
    pool.on(sky.Metric, lambda e: seen.add(e.node) if e.name == "cpu" else None)
    deadline = time.monotonic() + 10
    while len(seen) < nodes and time.monotonic() < deadline:
        assert sorted(busy(0.5) @ pool) == list(range(nodes))


def first(events: list[Any], kind: type, node: int | None = None) -> int:
    for i, event in enumerate(events):
        if isinstance(event, kind) and (node is None or getattr(event, "node", None) == node):
            return i
    raise AssertionError(f"no {kind.__name__}" + (f" for node {node}" if node is not None else ""))


def last(events: list[Any], kind: type) -> int:
    return max(i for i, event in enumerate(events) if isinstance(event, kind))


def assert_lifecycle(events: list[Any], nodes: int, per_node: tuple[type, ...]) -> None:
    """Every documented kind happened, each node's steps in `per_node` order, and the pool's around them."""
    missing = {kind.__name__ for kind in EVERY_KIND if not any(isinstance(e, kind) for e in events)}
    assert not missing, f"never emitted: {sorted(missing)}"
    for node in range(nodes):
        steps = [first(events, kind, node) for kind in per_node]
        assert steps == sorted(steps), [type(events[i]).__name__ for i in steps]
        assert first(events, sky.ClusterRequested) < steps[0]
        assert steps[-1] < first(events, sky.ClusterReady)
        assert first(events, sky.ShutdownRequested) < first(events, sky.InstanceDestroyed, node)
        # A node's figures flow from its handshake on, whether or not the others are ready yet.
        assert steps[-1] < first(events, sky.Metric, node) < first(events, sky.ShutdownRequested)
    ready, shutdown = first(events, sky.ClusterReady), first(events, sky.ShutdownRequested)
    assert first(events, sky.ClusterProvisioned) < ready
    for kind in (sky.TaskStarted, sky.TaskCompleted, sky.Log):
        assert ready < first(events, kind) < shutdown, kind.__name__
    assert first(events, sky.TaskStarted) < first(events, sky.TaskCompleted)
    assert first(events, sky.NodeReady) < first(events, sky.Error) < shutdown
    assert last(events, sky.InstanceDestroyed) < first(events, sky.ClusterDestroyed) == len(events) - 1
    assert {e.pool for e in events} == {events[0].pool}, "every event names its pool"
