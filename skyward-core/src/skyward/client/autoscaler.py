"""Elastic pools: how many nodes a pool should have, from the work waiting and the nodes idling.

`nodes=(2, 8)` or `sky.Nodes(desired=4, min=2, max=16)` makes a pool elastic: it starts at
`desired` and moves between its floor (`min`, else `desired`) and `max`. The pool samples its
`Load` every tick and resizes to what `Autoscaler.target` answers:

- up when tasks wait for a slot: enough nodes for the waiting tasks, up to `max`;
- down when the highest-numbered nodes have idled for `Options.autoscale_idle_timeout` and
  nothing waits, never below the floor. Only the highest indices go, so the nodes that stay are
  still numbered 0..n-1 and `sky.shard` keeps covering the data;
- never again within `Options.autoscale_cooldown` of the last change, so a burst of short tasks
  does not start and stop machines back to back.

The decision is a pure function of the load, kept apart from the pool so it can be read (and
tested) without machines.
"""

from __future__ import annotations

import math

import attrs


@attrs.frozen(kw_only=True)
class Load:
    """What the pool looks like at one tick."""

    #: Nodes the pool has, ready or starting.
    nodes: int
    #: Tasks waiting for a slot on any node (not pinned to one).
    waiting: int
    #: Tasks waiting of any kind, pinned ones included: a pool with any does not shrink.
    queued: int
    #: Tasks one node runs at once (`Worker.concurrency + buffer`, times workers per node).
    slots_per_node: int
    #: How many of the highest-numbered nodes, counted down from the last, have idled for the
    #: idle timeout (the count stops at the first that has not).
    idle_tail: int


@attrs.define
class Autoscaler:
    floor: int
    ceiling: int
    cooldown: float
    #: When the pool last changed size (the loop's clock); the cooldown runs from here.
    last_change: float = -math.inf

    def target(self, load: Load, now: float) -> int:
        """The node count the pool should move to now (`load.nodes` to stay)."""
        if now - self.last_change < self.cooldown:
            return load.nodes
        if load.waiting and load.nodes < self.ceiling:
            wanted = load.nodes + math.ceil(load.waiting / max(1, load.slots_per_node))
            return min(self.ceiling, wanted)
        if not load.queued and load.idle_tail and load.nodes > self.floor:
            return max(self.floor, load.nodes - load.idle_tail)
        return load.nodes

    def changed(self, now: float) -> None:
        self.last_change = now
