"""The client's end of metrics: what each node is asked to sample, and its batches as events.

A node samples only when something listens to `sky.Metric` as it starts: the console (every mode
but "silent"), `on_event=`, or a `pool.on(sky.Metric, ...)` registered before the pool starts.
Otherwise no sampler process is started at all: metrics nobody reads cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skyward.metrics import sampling_plan
from skyward.observe.events import ErrorReported, Metric

if TYPE_CHECKING:
    from skyward.client.node import NodeHandle


def plan(metrics: Any, listens: Callable[[type[Any]], bool]) -> tuple[tuple[Any, ...], ...]:
    """The sampling plan for `Image.metrics`, or none when nothing would receive a `Metric`."""
    if not listens(Metric):
        return ()
    return sampling_plan(metrics)


def emit_batch(node: NodeHandle, batch: list[tuple[Any, ...]]) -> None:
    """One `Metric` per sample of a METRICS frame from `node`, stamped with the time it was taken
    (the node's clock); a figure the node could not read becomes one non-fatal `ErrorReported`. Nothing
    before the node's `NodeReady`: its sampler may be quicker than the pool's handshake."""
    if not node.ready:
        return
    for name, value, unit, taken in batch:
        if value is None:
            message = f"metric {name!r} could not be read on node {node.index}: {unit}"
            node.emit(ErrorReported(message=message, fatal=False, node=node.index, pool=node.pool))
            continue
        node.emit(Metric(
            instance=node.info, node=node.index, name=name, value=value, unit=unit, time=taken,
            pool=node.pool,
        ))
