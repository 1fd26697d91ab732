"""Skyward's machines on Massed Compute found and deleted without a pool: `sky ls` / `sky down`.

Massed Compute has no tags: a machine is Skyward's when its name is `skyward-<pool>-<node>`
(`machine.instance_name`). Nothing else is listed or terminated, and `end` reads each machine back
by uuid before terminating it. A pool registers nothing beside its machines (its login key goes
with each deploy), so nothing else is left to delete. The key is `$MASSED_API_KEY`;
`$MASSED_API_URL` points the command at another endpoint. No lease is kept on the cloud's side:
its machines never count as expired.
"""

from __future__ import annotations

from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import KeyedSweeper, Row
from skyward.providers.sweep import Machine, parse_time
from skyward_massedcompute.account import ACCOUNT
from skyward_massedcompute.machine import NAME_PREFIX


@attrs.define
class MassedComputeSweeper(KeyedSweeper):
    name: str = "MassedCompute"
    prefix = NAME_PREFIX
    account = ACCOUNT
    api = "skyward_massedcompute.api:MassedAPI"

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.instances())

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.instance(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.terminate([machine_id])

    def in_region(self, row: Row, region: str) -> bool:
        return str(row.get("region") or "") == region

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        cents = row.get("price_cents_per_hour")
        try:
            hourly = float(cents) / 100 if cents is not None else None
        except (TypeError, ValueError):
            hourly = None
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row.get("uuid")),
            instance_type=str(row.get("product_name") or "?"),
            region=str(row.get("region") or "?"),
            state=str(row.get("status") or "?"),
            launched_at=parse_time(row.get("created")),
            hourly_price=hourly,
        )


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return MassedComputeSweeper().verify(status)
