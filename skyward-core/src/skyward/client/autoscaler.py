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

The decision (`Autoscaler`) is a pure function of the load, kept apart from the pool so it can
be read (and tested) without machines; `AutoscaleDriver` samples the load on the pool's loop and
carries the decision out through the fleet.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.client.cancelling import cancel_and_wait
from skyward.observe.events import ErrorReported

if TYPE_CHECKING:
    from skyward.client.fleet import Fleet
    from skyward.client.scheduler import Scheduler


@attrs.frozen(kw_only=True)
class Load:
    """What the pool looks like at one tick."""

    #: Nodes the pool has, ready or starting.
    nodes: int
    #: Tasks waiting for a slot on any node (not pinned to one).
    waiting: int
    #: Tasks waiting of any kind, pinned ones included: a pool with any does not shrink.
    queued: int
    #: Tasks one node runs at once (`Worker.slots`, times workers per node).
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


class AutoscaleDriver:
    """Sizes an elastic pool (`nodes=(2, 8)`, `Nodes(max=...)`) to its load, every tick (loop thread)."""

    def __init__(self, fleet: Fleet, scheduler: Scheduler, options: Any) -> None:
        self._fleet = fleet
        self._scheduler = scheduler
        self._options = options
        self._autoscaler: Autoscaler | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._scaling: asyncio.Task[None] | None = None

    def start(self, nodes: Any) -> None:
        """Start sampling, if `nodes` (the spec's `sky.Nodes`) leaves room to move."""
        if nodes.max is None or nodes.ceiling <= nodes.floor:
            return
        cooldown = self._options.autoscale_cooldown
        self._autoscaler = Autoscaler(floor=nodes.floor, ceiling=nodes.ceiling, cooldown=cooldown)
        self._timer = asyncio.get_running_loop().call_later(self._interval(), self._tick)

    async def stop(self) -> None:
        """Stop sampling, and a change in progress where it is: whatever it has added by now is
        among the fleet's instances, terminated with the rest."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._scaling is not None:
            await cancel_and_wait([self._scaling])

    def _interval(self) -> float:
        """How often the load is sampled: the reconcile tick, or sooner when the cooldown or the
        idle timeout is shorter, so neither is overshot by more than half of itself."""
        options = self._options
        periods = [options.reconcile_tick_interval, options.autoscale_idle_timeout / 2]
        if options.autoscale_cooldown > 0:
            periods.append(options.autoscale_cooldown / 2)
        return max(0.05, min(periods))

    def _tick(self) -> None:
        self._timer = None
        fleet = self._fleet
        if fleet.closing or self._autoscaler is None:
            return
        loop = asyncio.get_running_loop()
        if not self._scaling and not fleet.replacing and not fleet.resize_lock.locked():
            now = loop.time()
            load = self._load(now)
            target = self._autoscaler.target(load, now)
            if target != load.nodes:
                self._scaling = loop.create_task(self._scale(load, target))
        self._timer = loop.call_later(self._interval(), self._tick)

    def _load(self, now: float) -> Load:
        worker, fleet = self._options.worker_config, self._fleet
        waiting, queued = self._scheduler.backlog()
        return Load(
            nodes=fleet.size, waiting=waiting, queued=queued,
            slots_per_node=worker.slots * fleet.workers_per_node,
            idle_tail=fleet.idle_tail(now, self._options.autoscale_idle_timeout),
        )

    async def _scale(self, load: Load, target: int) -> None:
        assert self._autoscaler is not None
        if target > load.nodes:
            reason = f"autoscale: {load.waiting} task(s) waiting"
        else:
            reason = f"autoscale: idle for {self._options.autoscale_idle_timeout:g}s"
        structlog.get_logger().info("skyward.autoscale", nodes=load.nodes, target=target, reason=reason)
        try:
            await self._fleet.resize(target, reason)
        except Exception as exc:  # noqa: BLE001 - the pool goes on at its size; said, and tried again later
            message = f"autoscaling from {load.nodes} to {target} node(s) failed: {exc}"
            self._fleet.bus.emit(ErrorReported(message=message, fatal=False, pool=self._fleet.name))
        finally:
            self._autoscaler.changed(asyncio.get_running_loop().time())
            self._scaling = None
            self._scheduler.pump()
