"""How a pool holds its machines and gives them back: the lease it renews, terminate, release.

A machine left running costs money, so every way the pool lets machines go runs through here:
`terminate` for those a resize or a failed start lets go, `release` for all of them at stop, bounded
by the provider's own `release_timeout` (AWS termination can take minutes) and reporting by id what
it could not confirm, and `renew_lease`, the loop that moves the provider's expiry mark (AWS's
`skyward:expires` tag) forward while the client lives, so a long job is never taken for an
abandoned one by `sky down --expired`. Failures are reported (an `ErrorReported` event and the log), never
swallowed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skyward.client.spend import Spend
from skyward.observe.bus import EventBus
from skyward.observe.console import LINGERING
from skyward.observe.events import ErrorReported, InstanceDestroyed

if TYPE_CHECKING:
    from skyward.providers.base import Provider

#: The lease is renewed every `Spec.ttl`/3, but no more often than this and no less (seconds).
LEASE_MIN_INTERVAL = 60.0
LEASE_MAX_INTERVAL = 900.0
#: Slack beyond the provider's `release_timeout` before the pool reports machines unconfirmed.
RELEASE_MARGIN = 30.0
#: How long deleting the keys minted for the pool's volumes may take (seconds; an API call each).
VOLUME_KEYS_TIMEOUT = 60.0
#: How long the pool's stop waits for a lease renewal under way to land (seconds; one API call).
RENEWAL_WAIT = 10.0


def _consume(call: asyncio.Future[None]) -> None:
    if not call.cancelled():
        call.exception()


def lease_interval(ttl: float) -> float:
    """How often the client renews its lease: a third of `ttl`, within the bounds above."""
    return min(max(ttl / 3, LEASE_MIN_INTERVAL), LEASE_MAX_INTERVAL)


def lease_until(ttl: float, now: float) -> float:
    """Until when one renewal holds: `ttl` ahead, and at least three renewals' worth, so a
    renewal or two lost to a slow API never lets the lease lapse under a live client."""
    return now + max(float(ttl), 3 * lease_interval(ttl))


def bound(provider: Provider | None) -> float:
    """How long giving back the machines may take: the provider's `release_timeout` (none before
    a provider was made), and some."""
    return (float(provider.release_timeout) if provider is not None else 0.0) + RELEASE_MARGIN


class MachineRelease:
    """One pool's side of letting machines go; the provider and cluster come with each call, since
    the pool learns them only as it starts."""

    def __init__(self, pool: str, bus: EventBus, log: Any, spend: Spend) -> None:
        self.pool, self.bus, self.log, self.spend = pool, bus, log, spend
        #: The provider's renewal call the lease loop is waiting on, if any (`stop_renewing`).
        self._renewal: asyncio.Future[None] | None = None

    async def renew_lease(
        self, provider: Any, cluster: Any, instances: Callable[[], list[Any]], ttl: float,
        closing: Callable[[], bool],
    ) -> None:
        """Renew the lease on the pool's machines every `lease_interval` until `closing()`; a failed
        renewal is logged and tried again next time (the lease outlasts two). Stop it with
        `stop_renewing`, which lets a renewal under way land first."""
        while not closing():
            until = lease_until(ttl, time.time())
            call = asyncio.ensure_future(provider.renew_lease(cluster, instances(), until))
            self._renewal = call
            try:
                await asyncio.shield(call)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the next renewal may succeed
                self.log.warning("skyward.lease_renewal_failed", pool=self.pool, error=str(exc))
            await asyncio.sleep(lease_interval(ttl))

    async def stop_renewing(self, renewing: asyncio.Future[None]) -> None:
        """Stop the `renew_lease` loop, and let a renewal it had under way land (within
        `RENEWAL_WAIT`): what the pool marks next (a parked machine's `until`, the provider's own
        cleanup) must not be overwritten by a renewal that arrives after it."""
        renewing.cancel()
        await asyncio.gather(renewing, return_exceptions=True)
        call, self._renewal = self._renewal, None
        if call is not None and not call.done():
            call.add_done_callback(_consume)  # its failure was the loop's to log; the loop is gone
            await asyncio.wait([call], timeout=RENEWAL_WAIT)

    async def release(self, provider: Any, cluster: Any, instances: list[Any], linger: float = 0.0) -> str:
        """Terminate the machines and tear down what `prepare` made, within `bound`; past it,
        report the machines whose end was not confirmed, by id. With `linger` seconds (a clean
        exit with `Options(linger=True)`), the provider may keep them for a later pool instead
        (`Provider.park`): then nothing is terminated or torn down here, and the pool's end reason
        says so (it begins with `LINGERING`); else the reason is empty. Then, whatever happened,
        the keys minted for the pool's volumes are given back (`close_volume_stores`): after the
        machines, whose exit scripts still need them to unmount and upload."""
        try:
            return await self._release(provider, cluster, instances, linger)
        finally:
            await self.close_volume_stores(cluster)

    async def close_volume_stores(self, cluster: Any) -> None:
        """Delete the keys minted for `cluster`'s volumes (`client.volumes.close_volume_stores`,
        blocking API calls, so in a thread, within `VOLUME_KEYS_TIMEOUT`); a key that could not be
        deleted is reported (an `ErrorReported` event naming it, and the log), never raised."""
        from skyward.client.volumes import close_volume_stores

        try:
            closing = asyncio.to_thread(close_volume_stores, cluster)
            failures = await asyncio.wait_for(closing, VOLUME_KEYS_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - reported, as below
            why = f"{type(exc).__name__}: {exc}"
            failures = [f"the keys minted for the volumes were not confirmed deleted ({why})"]
        for failure in failures:
            self.log.error("skyward.volume_keys_left", pool=self.pool, error=failure)
            self.bus.emit(ErrorReported(message=f"{self.pool}: {failure}", fatal=False, pool=self.pool))

    async def _release(self, provider: Any, cluster: Any, instances: list[Any], linger: float) -> str:
        if linger > 0 and instances and await self._park(provider, cluster, instances, time.time() + linger):
            return f"{LINGERING} {linger:.0f} s for the next pool with this spec"

        async def give_back() -> None:
            await self.terminate(provider, cluster, instances)
            try:
                await provider.teardown(cluster)
            except Exception as exc:  # noqa: BLE001 - reported, as below
                self.report_failure(provider, "could not remove what it created", exc)

        limit = bound(provider)
        try:
            await asyncio.wait_for(give_back(), limit)
        except TimeoutError:
            ids = [i.id for i in instances]
            what = (
                f"did not confirm the end of {', '.join(ids)} within {limit:.0f} s" if ids
                else f"did not finish removing what it created within {limit:.0f} s"
            )
            self.log.error("skyward.release_unconfirmed", pool=self.pool, instances=ids, seconds=limit)
            self.report_failure(provider, what, TimeoutError("the provider's release is still under way"))
        return ""

    async def _park(self, provider: Any, cluster: Any, instances: list[Any], until: float) -> bool:
        try:
            kept = bool(await asyncio.wait_for(provider.park(cluster, instances, until), bound(provider)))
        except Exception as exc:  # noqa: BLE001 - reported; the machines are ended instead
            self.log.warning("skyward.park_failed", pool=self.pool, error=str(exc))
            return False
        if kept:
            self.spend.stopped(instances)
            self.log.info("skyward.machines_lingering", pool=self.pool, instances=len(instances),
                          seconds=round(until - time.time()))
        return kept

    async def terminate(self, provider: Any, cluster: Any, instances: list[Any]) -> None:
        """Terminate machines the pool lets go; a failure is reported, never swallowed."""
        instances = [i for i in instances if i is not None]
        if not instances or provider is None:
            return
        try:
            await provider.terminate(cluster, instances)
        except Exception as exc:  # noqa: BLE001 - reported; the pool goes on
            self.report_failure(provider, f"could not terminate {', '.join(i.id for i in instances)}", exc)
        else:
            for instance in instances:
                self.bus.emit(InstanceDestroyed(node=instance.node, instance_id=instance.id, pool=self.pool))
        finally:
            self.spend.stopped(instances)

    def report_failure(self, provider: Any, what: str, exc: BaseException) -> None:
        """Say loudly that something of this pool may still exist (and cost money), and what."""
        message = (
            f"{self.pool}: {provider.name} {what} ({type(exc).__name__}: {exc}); check the provider's "
            "console and delete anything tagged with this pool's id"
        )
        self.log.error("skyward.cleanup_failed", pool=self.pool, provider=provider.name, error=str(exc))
        self.bus.emit(ErrorReported(message=message, fatal=False, pool=self.pool))
