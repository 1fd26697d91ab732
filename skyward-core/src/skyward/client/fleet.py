"""The fleet: a pool's machines and the workers on them (loop thread).

It owns the provider, the cluster, the instances by node index and, through the scheduler's
methods, the worker handles. Here: which spec starts, the machines asked for and given back, the
pool's size, and its stop. A worker's start on its machine is `client/fleet_workers.py`'s; every
way a worker leaves the pool (its process ended, it was stuck and is restarted, a resize let its
node go, its node did not start) goes through `_remove`, which says why, and every way a node
leaves for good through `_let_go` (`client/fleet_losses.py`).

While the pool runs, it renews the provider's lease on its machines (`Provider.renew_lease`, every
~`Spec.ttl`/3), so a long job is never taken for an abandoned one. At the end, releasing the
machines is bounded by the provider's own `release_timeout`; what could not be confirmed gone by
then is reported by instance id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import structlog

from skyward.client import fleet_plan, release
from skyward.client.announce import Announcer
from skyward.client.cancelling import cancel_and_wait
from skyward.client.fleet_losses import FleetLosses
from skyward.client.fleet_workers import FleetWorkers
from skyward.client.hooks import PoolHooks
from skyward.client.preemption import NodeGuards
from skyward.client.release import MachineRelease
from skyward.client.spend import Spend
from skyward.collections.store import CollectionStore
from skyward.errors import ConfigurationError, PoolClosedError
from skyward.image import image_secrets
from skyward.observe.bus import EventBus
from skyward.observe.events import (
    ClusterDestroyed,
    ClusterProvisioned,
    ClusterReady,
    ClusterRequested,
    ErrorReported,
    InstanceProvisioned,
    PoolResized,
    SpecSkipped,
)
from skyward.secrets import register_secret

if TYPE_CHECKING:
    from skyward.client.scheduler import Scheduler


class Fleet(FleetWorkers, FleetLosses):
    def __init__(
        self, name: str, specs: tuple[Any, ...], options: Any, bus: EventBus, scheduler: Scheduler,
        *, pool_id: str | None = None,
    ) -> None:
        from skyward.providers.naming import new_pool_id

        self.name = name
        #: What every machine, key, node folder and record of this pool is keyed by: unique per pool,
        #: where the name is a label two pools may share (`skyward.providers.naming`).
        self.pool_id = pool_id or new_pool_id(name)
        #: Node replacements under way (`_replace`), for `teardown` to end first.
        self._replacements: set[asyncio.Task[None]] = set()
        self.specs = specs
        self.options = options
        self.worker = options.worker_config
        self.bus = bus
        self._scheduler = scheduler
        self.spec: Any = None
        self.cluster: Any = None
        self.image: Any = None
        self.provider: Any = None
        self.instances: dict[int, Any] = {}
        self.hooks = PoolHooks(())
        self.bootstrap_ops: tuple[Any, ...] = ()
        self.worker_plugins: tuple[Any, ...] = ()
        self.workers_per_node = 1
        #: The pool is shutting down: a lost worker is not replaced, nothing more is started.
        self.closing = False
        #: One size change at a time: `pool.resize` and the autoscaler both take it.
        self.resize_lock = asyncio.Lock()
        #: Worker keys whose replacement is starting.
        self.replacing: set[int] = set()
        #: Why the last node that could not be replaced was given up, for tasks that then cannot run.
        self._lost_reason = ""
        #: Credentials in the image (`image_secrets`: env values, index passwords), masked wherever
        #: output is shown.
        self._secrets: tuple[str, ...] = ()
        self._wheels: tuple[Any, ...] = ()  # Skyward's wheels for the nodes (`prepare_wheels`, at start)
        self._spend = Spend()
        self._requested_at = time.monotonic()
        self._lease: asyncio.Task[None] | None = None
        self._log = structlog.get_logger()
        self._release = MachineRelease(self.name, self.bus, self._log, self._spend)
        # sky.dict, sky.lock...: the pool's one copy; Options(cluster=False) turns them off
        self.collections = CollectionStore(name, enabled=options.cluster is not False)
        self.announce = Announcer(bus, name)  # machine lifecycle events (client/announce.py)
        #: Preemption notices and health checks: a new machine for a node whose machine is lost.
        self.guards = NodeGuards(self)

    # -- what the pool asks ------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """How many nodes the pool has, ready or starting."""
        return len(self.instances)

    def current_nodes(self) -> int:
        """How many nodes are ready right now."""
        return len(self._scheduler.ready_nodes())

    def node_indices(self) -> list[int]:
        return sorted(self.instances)

    def worker_keys(self) -> list[int]:
        per = self.workers_per_node
        return [node * per + worker for node in self.node_indices() for worker in range(per)]

    def target_key(self, target: int | str | None) -> int | None:
        """The scheduler key for `target=`: a node index names that node's first worker."""
        if target is None:
            return None
        if target == "head":
            return 0
        if isinstance(target, int) and not isinstance(target, bool):
            known = self.node_indices()
            if target not in known:
                raise ConfigurationError(
                    f"target={target}: this pool has nodes {known}; pass one of them or 'head'"
                )
            return target * self.workers_per_node
        raise ConfigurationError(f"target={target!r}: use None (round-robin), 'head' or a node index")

    def idle_tail(self, now: float, idle_after: float) -> int:
        """How many of the last nodes idled `idle_after` s, from the last down (shrink candidates)."""
        count = 0
        for index in sorted(self.instances, reverse=True):
            handles = self._scheduler.workers_of(index)
            if len(handles) < self.workers_per_node or any(n.idle_for(now) < idle_after for n in handles):
                break
            count += 1
        return count

    # -- start -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Provision the first spec that starts (in `Options.selection` order) and its workers.

        With several specs, those that cannot start at all (credentials missing, package not
        installed: `fleet_plan.startable`) are skipped first, each said with a `SpecSkipped` event
        and a log line, so neither pricing nor a start is attempted on them. A spec that fails to
        start falls over to the next. Only when none starts is an error raised, listing each spec
        and why: a `ConfigurationError` when none could even be tried, else the last failure with
        that list as a note.
        """
        summary, nodes = fleet_plan.describe(self.specs), self.specs[0].nodes.desired
        self.bus.emit(ClusterRequested(spec_summary=summary, nodes=nodes, pool=self.name))
        started = self._requested_at = time.monotonic()
        from skyward.bootstrap.wheels import prepare_wheels

        ready, skipped = await fleet_plan.startable(self.specs, self._log)
        for skip in skipped:
            self._log.info(  # the file's line; the console shows the event
                "skyward.spec_skipped", pool=self.name, spec=skip.position, provider=skip.provider,
                reason=skip.reason, credential=skip.credential,
            )
            self.bus.emit(SpecSkipped(
                message=skip.message, provider=skip.provider, reason=skip.reason, credential=skip.credential,
                spec=skip.position, pool=self.name,
            ))
        if not ready:
            raise ConfigurationError(
                f"{self.name}: {fleet_plan.why_none_started(self.specs, skipped, ())}\n"
                "Give one of them what it lacks, as each line says (`sky providers` shows which "
                "credentials are found, and where)."
            )
        # Skyward's own wheels for the nodes: a client that cannot ship itself fails before any
        # machine is asked for, and the nodes then upload the cached wheels.
        self._wheels = await asyncio.to_thread(prepare_wheels, ready)
        failed: list[tuple[Any, str]] = []
        ordered = await fleet_plan.in_selection_order(tuple(ready), self.options.selection, self._log)
        for spec in ordered:
            try:
                await self._start_spec(spec)
                break
            except Exception as exc:
                failed.append((spec, str(exc) or type(exc).__name__))
                if len(failed) == len(ordered):
                    if len(self.specs) > 1:
                        exc.add_note(fleet_plan.why_none_started(self.specs, skipped, failed))
                    raise
                why = f"{spec.provider.name}: {failed[-1][1]}"
                self.bus.emit(ErrorReported(message=f"falling back after {why}", fatal=False, pool=self.name))
                await self.teardown("fallback")
                self.closing = False
        seconds = time.monotonic() - started
        self.bus.emit(ClusterReady(nodes=self.current_nodes(), seconds=seconds, pool=self.name))
        self._lease = asyncio.ensure_future(self._release.renew_lease(
            self.provider, self.cluster, lambda: list(self.instances.values()), float(self.spec.ttl),
            lambda: self.closing,
        ))
        self.guards.start()

    async def _start_spec(self, spec: Any) -> None:
        self.spec = spec
        self.hooks = PoolHooks(tuple(spec.plugins))
        self.provider = spec.provider.create(self.options)
        self.announce.attach(self.provider)
        self.cluster = await self.provider.prepare(spec, self.pool_id)
        self.image = self.hooks.transform_image(spec.image, self.cluster)
        self._secrets = image_secrets(self.image)
        for secret in self._secrets:  # masked in this pool's events, Skyward's logs and bootstrap errors
            register_secret(secret)
            self.bus.add_secret(secret)
        self.bootstrap_ops = self.hooks.bootstrap_ops(self.cluster)
        self.worker_plugins = self.hooks.worker_plugins()
        self.workers_per_node = self.hooks.workers_per_node(spec)
        count = spec.nodes.desired
        instances = await self._provision(range(count))
        for i in instances:
            self.bus.emit(InstanceProvisioned(node=i.node, instance_id=i.id, instance=None, pool=self.name))
        self.bus.emit(ClusterProvisioned(nodes=len(instances), pool=self.name))
        starts = [asyncio.ensure_future(self._start_workers(i, count)) for i in instances]
        needed = spec.nodes.min or count
        done = failed = 0
        failure: BaseException | None = None
        for next_done in asyncio.as_completed(starts):
            try:
                await next_done
                done += 1
            except Exception as exc:  # noqa: BLE001 - the first failure is raised below
                failure = failure or exc
                failed += 1
            # Enough nodes, or no longer enough left to reach it: a failed bootstrap stops the
            # others at once rather than after they finish (paid minutes on a cloud).
            if done >= needed or len(starts) - failed < needed:
                break
        if done < needed:
            for pending in starts:
                pending.cancel()
            await asyncio.gather(*starts, return_exceptions=True)  # let each cancelled start clean up
            raise failure or RuntimeError("nodes failed to start")

    async def _provision(self, indices: Collection[int]) -> list[Any]:
        """Machines for the node `indices`, counted in the pool's spend and known from now on."""
        self.announce.requested(indices)
        instances = await self.provider.provision(self.cluster, list(indices))
        self._spend.started(instances)
        for instance in instances:
            self.instances[instance.node] = instance
        return instances

    # -- size --------------------------------------------------------------------------------------------

    async def resize(self, desired: int, reason: str = "pool.resize()") -> None:
        """Grow or shrink to `desired` nodes (the highest indices go first), one change at a time."""
        async with self.resize_lock:
            previous = len(self.instances)
            try:
                if desired > previous:
                    await self._grow(desired)
                elif desired < previous:
                    await self._shrink(desired)
            finally:  # a resize cut off (the pool's exit) still tells the size it reached
                if (now := len(self.instances)) != previous:
                    self.bus.emit(PoolResized(nodes=now, previous=previous, reason=reason, pool=self.name))

    async def _grow(self, desired: int) -> None:
        first = max(self.instances, default=-1) + 1
        instances = await self._provision(range(first, first + desired - len(self.instances)))
        starts = await asyncio.gather(
            *(self._start_workers(i, desired) for i in instances), return_exceptions=True
        )
        failed = [(i, e) for i, e in zip(instances, starts, strict=True) if isinstance(e, BaseException)]
        if failed:
            # A node that did not start is given back: no half-started machine stays billed,
            # and broadcasts do not wait for it.
            for instance, _ in failed:
                await self._let_go(instance.node, "did not start and was given back")
            await self._give_back([i for i, _ in failed])
        self._announce_places(exclude={i.node for i in instances})
        if failed:
            raise failed[0][1]

    async def _shrink(self, desired: int) -> None:
        why = f"left the pool when it was resized to {desired} node(s)"
        timeout = self.options.shutdown_timeout
        for index in self.node_indices()[desired:]:
            await self._give_back([await self._let_go(index, why, close_timeout=timeout)])
        self._announce_places()
        self._scheduler.pump()

    def _announce_places(self, exclude: Collection[int] = ()) -> None:
        """Tell every worker its new place after a resize (`total_nodes`, `peers`), so
        `sky.instance_info()` and `sky.shard` in later tasks agree across old and new nodes.

        Sent on each worker's channel ahead of any later task, so every task read after it sees
        the new place. Nodes in `exclude` were started with it.
        """
        total = len(self.instances)
        for node in self._scheduler.handles():
            if node.index in exclude or node.lost:
                continue
            node.move(self._place(node.index, total, node.info.worker))

    # -- stop --------------------------------------------------------------------------------------------

    def stop_timeout(self) -> float:
        """How long the whole stop may take: the workers' `shutdown_timeout`, then the release."""
        return float(self.options.shutdown_timeout) + release.bound(self.provider)

    async def _give_back(self, instances: list[Any]) -> None:
        """Terminate machines the pool lets go (a resize, a failed start or replacement)."""
        await self._release.terminate(self.provider, self.cluster, instances)

    async def teardown(self, reason: str) -> None:
        """Stop every worker and give back every machine (`reason`: why the pool stops)."""
        self.closing = True
        self.guards.stop()
        if self._lease is not None:
            lease, self._lease = self._lease, None
            await self._release.stop_renewing(lease)
        # A node replacement still starting ends before the machines are given back: left to run,
        # it would start a worker on a machine being released, after the pool's loop is gone.
        await cancel_and_wait(list(self._replacements))
        nodes = self._scheduler.clear()
        for node in nodes:
            where = f"{self.name} shut down on node {node.index}"
            for task in node.interrupt():
                task.fail(PoolClosedError(f"{task.name}() was interrupted: {where}"))
        closing = (n.close(self.options.shutdown_timeout) for n in nodes)
        await asyncio.gather(*closing, return_exceptions=True)
        for node in nodes:
            node.flush_logs()
        if self.provider is not None and self.cluster is not None:
            linger = float(self.spec.ttl) if self.options.linger and not reason else 0.0
            instances = list(self.instances.values())
            reason = await self._release.release(self.provider, self.cluster, instances, linger) or reason
        self.instances.clear()
        self.bus.emit(ClusterDestroyed(
            reason=reason, seconds=time.monotonic() - self._requested_at, cost=self._spend.usd, pool=self.name
        ))
