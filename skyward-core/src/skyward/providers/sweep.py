"""Finding and ending Skyward's machines without a pool: what `sky ls` and `sky down` work with.

A pool ends its own machines when it exits; a client that crashed, lost its network or was
killed leaves them running. Every machine Skyward makes carries its pool's id (AWS: the
`skyward:pool` tag; RunPod and Vast.ai: a `skyward-<pool>-<node>` name or label), so a
provider package can find them again with nothing but credentials. Each answers the
`skyward_sweepers` hook with a `Sweeper`: `machines()` lists the machines that bear Skyward's
mark (never any other), `end()` ends some of them and whatever their pools created with them.
These records are what both sides exchange; they import nothing of a provider.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from skyward.providers.credentials import CredentialStatus


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@attrs.frozen
class Machine:
    """One machine a Skyward pool made, as its provider lists it now.

    `id` is the provider's own id (what its console shows). `node` is None when the provider does
    not say. `launched_at` and `lease_expires` are aware UTC datetimes or None when unknown: the
    lease is when the machine may be taken for abandoned (AWS's `skyward:expires` tag); providers
    without one leave it None, and `sky down --expired` then never selects their machines.
    `hourly_price` is in USD, None when the provider does not tell.
    """

    provider: str
    pool: str
    node: int | None
    id: str
    instance_type: str
    region: str
    state: str
    launched_at: datetime.datetime | None = None
    hourly_price: float | None = None
    lease_expires: datetime.datetime | None = None

    def expired(self, now: datetime.datetime | None = None) -> bool:
        """Whether its lease has lapsed (False when it has none)."""
        return self.lease_expires is not None and self.lease_expires <= (now or utc_now())

    def age(self, now: datetime.datetime | None = None) -> datetime.timedelta | None:
        return None if self.launched_at is None else (now or utc_now()) - self.launched_at

    def spent(self, now: datetime.datetime | None = None) -> float | None:
        """What it has cost so far at its current hourly price (None when either is unknown)."""
        age = self.age(now)
        if age is None or self.hourly_price is None:
            return None
        return round(self.hourly_price * max(age.total_seconds(), 0.0) / 3600.0, 4)

    def as_json(self, now: datetime.datetime | None = None) -> dict[str, Any]:
        age = self.age(now)
        return {
            "provider": self.provider, "pool": self.pool, "node": self.node, "id": self.id,
            "instance_type": self.instance_type, "region": self.region, "state": self.state,
            "launched_at": _iso(self.launched_at),
            "age_seconds": None if age is None else int(age.total_seconds()),
            "hourly_price": self.hourly_price, "spent": self.spent(now),
            "lease_expires": _iso(self.lease_expires), "expired": self.expired(now),
        }


@attrs.frozen
class Ended:
    """One thing `end()` dealt with: a machine (`kind="machine"`) or a resource its pool made
    (`"security-group"`, `"key-pair"`...); `error` is None when it was ended, else why not."""

    provider: str
    pool: str
    kind: str
    id: str
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class SweepReport:
    """What `Sweeper.end` did: everything it ended, and everything it could not (with why)."""

    items: tuple[Ended, ...] = ()

    @property
    def ended(self) -> tuple[Ended, ...]:
        return tuple(i for i in self.items if i.error is None)

    @property
    def failed(self) -> tuple[Ended, ...]:
        return tuple(i for i in self.items if i.error is not None)


@runtime_checkable
class Sweeper(Protocol):
    """One provider's view of Skyward's machines on an account, without a pool.

    `name` is the provider's public name (`"AWS"`, as `--provider` takes it, case aside).
    `credentials()` says whether there is anything to look with: a provider without them is
    skipped and the output says so. `machines(region)` lists the machines carrying Skyward's mark
    (`region` narrows a provider that has regions; others ignore it). `end(machines, pools)`
    ends these machines (only those that still carry the mark when looked at again) and, for each
    pool in `pools` that has no machine left, what that pool created beside them.
    """

    name: str

    def credentials(self) -> CredentialStatus: ...

    def machines(self, region: str | None = None) -> list[Machine]: ...

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport: ...


def _iso(when: datetime.datetime | None) -> str | None:
    return None if when is None else when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def named_pool(prefix: str, name: object) -> tuple[str, int] | None:
    """(pool, node) of a machine named `<prefix><pool>-<node>`, Skyward's mark on a cloud without
    tags (RunPod's pods, Verda's VMs, Novita's instances); None for any other name (or none)."""
    match = re.match(rf"^{re.escape(prefix)}(?P<pool>.+)-(?P<node>\d+)$", str(name or ""))
    return None if match is None else (match["pool"], int(match["node"]))


def parse_time(text: object) -> datetime.datetime | None:
    """An ISO 8601 time (`2026-01-02T03:04:05Z`, with or without zone: UTC then), a datetime, or
    a Unix timestamp, as an aware UTC datetime; None for anything else."""
    if isinstance(text, datetime.datetime):
        return text if text.tzinfo else text.replace(tzinfo=datetime.UTC)
    if isinstance(text, int | float) and text > 0:
        return datetime.datetime.fromtimestamp(float(text), datetime.UTC)
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        when = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)


async def end_each(
    provider: str,
    machines: Sequence[Machine],
    still_ours: Callable[[Machine], Awaitable[bool]],
    end: Callable[[Machine], Awaitable[object]],
    mark: str,
) -> list[Ended]:
    """End each machine that `still_ours` reads back with this pool's `mark` (a name, a label) just
    before, so a machine whose id was reused or relabelled since `machines()` is left alone; one
    result each, failures included, never raised."""
    items: list[Ended] = []
    for machine in machines:
        try:
            if not await still_ours(machine):
                items.append(Ended(provider, machine.pool, "machine", machine.id,
                                   f"not found with a Skyward {mark} for this pool; left alone"))
                continue
            await end(machine)
        except Exception as exc:  # noqa: BLE001 - reported beside the others
            items.append(Ended(provider, machine.pool, "machine", machine.id, str(exc)))
            continue
        items.append(Ended(provider, machine.pool, "machine", machine.id))
    return items
