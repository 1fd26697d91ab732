"""Starting one worker of a pool on its machine: the `Fleet`'s start of a node, as a mixin.

Kept apart from the fleet (`client/fleet.py`, which chooses the spec and asks for machines) because
a worker's start is its own job, and three callers share it: the pool's start, a resize that adds
nodes, and a worker replaced after it was lost (`client/fleet_losses.py`, `client/preemption.py`).
It hands the provider what the node needs (`NodeSetup`), sends the worker its handshake (`Hello`)
and puts the ready handle in the scheduler; a worker that does not answer is killed, never left.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs

from skyward.client import fleet_plan, telemetry
from skyward.client.node import NodeHandle
from skyward.messages import Hello
from skyward.observe.events import InstanceBootstrapped, NodeReady
from skyward.providers.base import NodeSetup
from skyward.tracebacks import include_sources

if TYPE_CHECKING:
    from skyward.client.announce import Announcer
    from skyward.client.hooks import PoolHooks
    from skyward.client.scheduler import Scheduler
    from skyward.collections.store import CollectionStore
    from skyward.extension.plugin import LaunchCommand
    from skyward.observe.bus import EventBus
    from skyward.task.instance import InstanceInfo

#: How long a started worker has to answer its handshake.
HANDSHAKE_TIMEOUT = 60.0


class FleetWorkers:
    """Start the worker processes of a node (one, unless a plugin such as mig asks for more)."""

    # The fleet's state these methods work on (set in `Fleet.__init__` and its start).
    name: str
    pool_id: str
    options: Any
    worker: Any
    bus: EventBus
    spec: Any
    cluster: Any
    image: Any
    provider: Any
    instances: dict[int, Any]
    hooks: PoolHooks
    bootstrap_ops: tuple[Any, ...]
    worker_plugins: tuple[Any, ...]
    workers_per_node: int
    announce: Announcer
    collections: CollectionStore
    _scheduler: Scheduler
    _secrets: tuple[str, ...]
    _wheels: tuple[Any, ...]

    if TYPE_CHECKING:  # the fleet's, where a lost worker goes (client/fleet_losses.py)

        def on_node_lost(self, node: NodeHandle, exc: BaseException | None, restart: str = "") -> None: ...

    async def _start_workers(self, instance: Any, total: int) -> None:
        """Every worker process of one node (one, unless a plugin such as mig asks for more)."""
        index, per = instance.node, self.workers_per_node
        await asyncio.gather(*(self._start_node(index, instance, total, worker=w) for w in range(per)))

    async def _start_node(self, index: int, instance: Any, total: int, worker: int = 0) -> NodeHandle:
        setup = NodeSetup(
            image=self.image, ops=self.bootstrap_ops, launch=self._launch_command(index, total),
            emit=self.announce.emit, bootstrap_timeout=self._bootstrap_timeout(), secrets=self._secrets,
            worker=worker, end_command=self.hooks.end_machine_command(self.provider, self.cluster, instance),
            wheels=self._wheels,
        )
        channel = await self.provider.connect(self.cluster, instance, setup)
        self.announce.launched(self.provider, instance, worker)
        info = self._place(index, total, worker)
        key = index * self.workers_per_node + worker
        buffer = self.worker.buffer
        node = NodeHandle(
            index, instance, info, channel, self.worker.concurrency,
            self.bus.emit, self.on_node_lost, self._scheduler.pump_soon, key=key,
            listens=self.bus.listens, pool=self.name, tally=self.bus.tally,
            fixed_window=None if buffer is None else self.worker.concurrency + buffer,
        )
        node.on_start = self._scheduler.started  # a task that waited there: its time limit starts
        hello = Hello(
            info=info, concurrency=self.worker.concurrency, executor=self.worker.resolved_executor,
            reuse_processes=self.worker.reuse_processes, env=dict(self.image.env),
            sys_path=(), plugins=self.worker_plugins,
            # A guarded node's guardian holds the lease; the worker's own watchdog only for the rest.
            ttl=0.0 if self.provider.guards_nodes else float(self.spec.ttl),
            shutdown_command=None if self.provider.guards_nodes else self.provider.shutdown_command,
            include_sources=include_sources(self.image.includes),
            metrics=telemetry.plan(self.image.metrics, self.bus.listens),
        )
        self.collections.serve(node)
        try:
            await node.handshake(hello, HANDSHAKE_TIMEOUT)
        except BaseException:
            node.kill()
            await channel.close(timeout=1)
            raise
        self.announce.running(self.provider, instance, worker)
        self._scheduler.add(node)
        node.start_pings(min(self.spec.ttl / 3, 30.0) if self.spec.ttl > 0 else 0)
        if worker == 0:
            self.bus.emit(InstanceBootstrapped(node=index, instance=info, pool=self.name))
            self.bus.emit(NodeReady(node=index, instance=info, pool=self.name))
        self._scheduler.pump()
        return node

    def _bootstrap_timeout(self) -> float:
        """`Options.bootstrap_timeout` when set, else the image's own."""
        option = self.options.bootstrap_timeout
        return float(option if option is not None else self.image.bootstrap_timeout)

    def _launch_command(self, index: int, total: int) -> LaunchCommand:
        """The worker's start command, folded through every plugin's launcher in plugin order."""
        instance, head = self.instances[index], self.instances.get(0, self.instances[index])
        return self.hooks.worker_launch(
            self.provider, self.cluster, index=index, total=total, instance=instance, head=head,
            worker=self.worker,
        )

    def _place(self, index: int, total: int, worker: int) -> InstanceInfo:
        """What worker `worker` of node `index` learns about its place in a pool of `total` nodes."""
        info = fleet_plan.instance_info(self.spec, self.cluster, self.instances, index, total, self.pool_id)
        return attrs.evolve(info, worker=worker, workers_per_node=self.workers_per_node)
