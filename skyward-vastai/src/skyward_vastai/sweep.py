"""Skyward's instances on Vast.ai found and destroyed without a pool: Vast's answer to `sky ls` /
`sky down`.

Vast has no tags: an instance is Skyward's when its label is `skyward-<pool>-node-<node>`, with
`@<epoch seconds>` after it, the pool's lease, which its live client moves forward
(`VastAIProvider.label_prefix`, `renew_lease`); nothing else is listed or destroyed, and `end` reads each
instance back by id, label included, before destroying it. A pool creates nothing on Vast
besides its instances, so ending a pool is destroying them.

The key is found as for a pool (`$VAST_API_KEY`, then the files `vastai set api-key` writes);
`$VAST_SERVER_URL` points the command at another server (a proxy, a test server), as
`VastAI(server_url=...)` does a pool. An instance whose label carries no lease never counts as
expired.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.sweep import Ended, Machine, SweepReport, end_each, parse_time

URL_VARIABLE = "VAST_SERVER_URL"
_LABEL = re.compile(r"^skyward-(?P<pool>.+)-node-(?P<node>\d+)(?:@(?P<expires>\d+))?$")
T = TypeVar("T")


def pool_of(row: dict[str, Any] | None) -> tuple[str, int] | None:
    """(pool, node) of an instance Skyward rented, read from its label; None for any other."""
    match = _LABEL.match(str((row or {}).get("label") or ""))
    return None if match is None else (match["pool"], int(match["node"]))


def lease_of(row: dict[str, Any] | None) -> datetime.datetime | None:
    """When the lease in a Skyward label lapses (aware UTC), None when it carries none."""
    match = _LABEL.match(str((row or {}).get("label") or ""))
    if match is None or match["expires"] is None:
        return None
    return datetime.datetime.fromtimestamp(int(match["expires"]), tz=datetime.UTC)


@attrs.define
class VastSweeper:
    name: str = "VastAI"

    def credentials(self) -> CredentialStatus:
        from skyward_vastai.config import VastAI

        return VastAI.credentials()

    def _run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        from skyward_vastai.account import resolve_api_key
        from skyward_vastai.api import VastAPI
        from skyward_vastai.config import DEFAULT_SERVER_URL

        api = VastAPI(resolve_api_key(None), (os.environ.get(URL_VARIABLE) or DEFAULT_SERVER_URL).rstrip("/"))
        return asyncio.run(work(api))

    def machines(self, region: str | None = None) -> list[Machine]:
        async def work(api: Any) -> list[dict[str, Any]]:
            return list(await api.instances())

        return [self._machine(row) for row in self._run(work) if pool_of(row) is not None]

    def _machine(self, row: dict[str, Any]) -> Machine:
        pool, node = pool_of(row) or ("", None)
        price = row.get("dph_total")
        return Machine(
            provider=self.name, pool=pool, node=node, id=str(row.get("id")),
            instance_type=f"{row.get('num_gpus') or 0}x {row.get('gpu_name') or '?'}"
            + (" (spot)" if row.get("is_bid") else ""),
            region=str(row.get("geolocation") or "?"),
            state=str(row.get("actual_status") or row.get("cur_state") or "?"),
            launched_at=parse_time(row.get("start_date")),
            hourly_price=float(price) if isinstance(price, int | float) else None,
            lease_expires=lease_of(row),
        )

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        async def work(api: Any) -> list[Ended]:
            async def still_ours(machine: Machine) -> bool:
                found = pool_of(await api.show(int(machine.id)))
                return found is not None and found[0] == machine.pool

            return await end_each(
                self.name, machines, still_ours, lambda m: api.destroy(int(m.id)), "label"
            )

        return SweepReport(tuple(self._run(work))) if machines else SweepReport()
