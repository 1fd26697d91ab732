"""A node's machine taken back or gone bad: a new machine in its place (loop thread).

`NodeGuards` watches what the fleet (`client/fleet.py`) does not see on the channel:

- **Preemption.** Every `Options.reconcile_tick_interval` seconds it asks the provider which of
  the pool's machines their cloud is taking back (`Provider.preemptions`: AWS's spot interruption
  notice read from the instance metadata service on the node, RunPod's reclaimed interruptible
  pod, Vast's outbid instance, as each provider's API says), and the fleet asks it too when a
  node is lost (`lost_machine`): a machine that died because it was reclaimed is replaced, not
  restarted in place on hardware that is gone.
- **Health.** With `Options(health_checker=...)`, `client/health.py` runs the check on every
  node and hands over a node that failed it too often.

Either way `replace` does the same: `InstancePreempted` (when the cloud took it), the node's
workers leave through `Fleet._remove` (so no new task goes there and its in-flight tasks are
retried elsewhere, each up to `Options.retry_on_interruption` times, or fail with
`NodeLostError`), its machine is terminated, a new one is provisioned in the same node slot and
started, and `InstanceReplaced` names both. A replacement that fails gives the slot up as a lost
node that cannot be replaced does.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import structlog

from skyward.observe.events import ErrorReported, InstancePreempted, InstanceReplaced
from skyward.providers.base import Provider

if TYPE_CHECKING:
    from skyward.client.fleet import Fleet


class NodeGuards:
    """The pool's watch over its machines: preemption notices and health checks (see the module)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        #: Node indices whose machine is being replaced.
        self.busy: set[int] = set()
        self._tasks: list[asyncio.Task[Any]] = []
        self._log = structlog.get_logger()

    def start(self) -> None:
        """Start watching (once the pool is up): preemptions if the provider reports any, and the
        health checks if the options ask for them."""
        fleet = self.fleet
        loop = asyncio.get_running_loop()
        if reports_preemptions(fleet.provider):
            self._tasks.append(loop.create_task(self._watch(float(fleet.options.reconcile_tick_interval))))
        checker = fleet.options.health_checker
        if checker is not None:
            from skyward.client.health import HealthMonitor

            monitor = HealthMonitor(fleet, checker, self.unhealthy)
            self._tasks.append(loop.create_task(monitor.run()))

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    # -- preemption --------------------------------------------------------------------------------

    async def _watch(self, tick: float) -> None:
        while not self.fleet.closing:
            await asyncio.sleep(tick)
            for index, reason in (await self._taken_back()).items():
                asyncio.get_running_loop().create_task(self.replace(index, reason, preempted=True))

    async def _taken_back(self, only: int | None = None) -> dict[int, str]:
        """The node indices whose machines the provider says are being taken back, with why."""
        fleet = self.fleet
        live = [i for n, i in fleet.instances.items() if n not in self.busy and only in (None, n)]
        if not live or fleet.provider is None or fleet.closing:
            return {}
        try:
            notices = await fleet.provider.preemptions(fleet.cluster, live)
        except Exception as exc:  # noqa: BLE001 - the next tick asks again
            self._log.warning("skyward.preemption_check_failed", pool=fleet.name, error=str(exc))
            return {}
        return {i.node: notices[i.id] for i in live if i.id in notices}

    async def lost_machine(self, index: int) -> bool:
        """Node `index`'s worker is gone: True when its machine was taken back, and has now been
        replaced by a new one (or is being replaced); False when the fleet should restart the
        worker on the same machine."""
        if index in self.busy:
            return True
        if not reports_preemptions(self.fleet.provider):
            return False
        reason = (await self._taken_back(only=index)).get(index)
        if reason is None:
            return False
        await self.replace(index, reason, preempted=True)
        return True

    # -- health ------------------------------------------------------------------------------------

    def unhealthy(self, index: int, why: str) -> None:
        """The health monitor gave up on node `index`."""
        asyncio.get_running_loop().create_task(self.replace(index, why, preempted=False))

    # -- replacement -------------------------------------------------------------------------------

    async def replace(self, index: int, why: str, *, preempted: bool) -> None:
        """A new machine for node `index` in place of the one there (see the module)."""
        fleet = self.fleet
        old = fleet.instances.get(index)
        if old is None or index in self.busy or fleet.closing:
            return
        self.busy.add(index)
        keys = {index * fleet.workers_per_node + w for w in range(fleet.workers_per_node)}
        fleet.replacing.update(keys)  # queued tasks wait for the new node, not fail for want of one
        new: Any = None
        what = "was preempted" if preempted else "was replaced"
        try:
            self._log.info("skyward.machine_replacing", pool=fleet.name, node=index, reason=why)
            if preempted:
                fleet.bus.emit(InstancePreempted(node=index, reason=why, instance_id=old.id, pool=fleet.name))
            for node in fleet._scheduler.workers_of(index):
                fleet._remove(node, f"{what}: {why}", lost=True)
                node.kill()
                with contextlib.suppress(Exception):
                    await node.close(timeout=1)
            async with fleet.resize_lock:  # not while a resize adds or lets go of nodes
                if fleet.instances.get(index) is not old:
                    return  # a resize let the node go meanwhile, and gave its machine back
                fleet.instances.pop(index, None)
                await fleet._give_back([old])
                if fleet.closing:
                    return
                new = (await fleet._provision([index]))[0]
                await fleet._start_workers(new, len(fleet.instances))
                fleet.bus.emit(InstanceReplaced(node=index, old_id=old.id, new_id=new.id, pool=fleet.name))
                fleet._announce_places(exclude={index})
        except Exception as exc:  # noqa: BLE001 - reported; the slot is given up as a lost node's is
            message = f"node {index} could not be replaced after it {what}: {exc}"
            fleet._lost_reason = message
            fleet.bus.emit(ErrorReported(message=message, fatal=False, node=index, pool=fleet.name))
            gone = await fleet._let_go(index, f"{what} and could not be replaced: {exc}", keys=keys)
            await fleet._give_back([gone or new])
        finally:
            self.busy.discard(index)
            fleet.replacing.difference_update(keys)
            fleet.fail_if_no_node_left()
            fleet._scheduler.pump()


def reports_preemptions(provider: Any) -> bool:
    """Whether `provider` writes `preemptions` (the base's answers none: no need to ask it)."""
    method = getattr(type(provider), "preemptions", None)
    return method is not None and method is not Provider.preemptions
