"""Skyward's VMs on Lambda found and terminated without a pool: Lambda's answer to `sky ls` /
`sky down`.

A VM is Skyward's when its name is `skyward-<pool>-<node>` (`machine.instance_name`); nothing
else is listed or terminated, and `end` reads each VM back by id before terminating it. A pool
also leaves its login key (`skyward-<pool>`): once a pool has no VM left, `end` deletes it too.
The key is `$LAMBDA_API_KEY`; `$LAMBDA_API_URL` points the command at another endpoint. Lambda
has no lease: its VMs never count as expired.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import KeyedSweeper, Row
from skyward.providers.naming import MACHINE_PREFIX as NAME_PREFIX
from skyward.providers.sweep import Ended, Machine, parse_time
from skyward_lambda.account import ACCOUNT


@attrs.define
class LambdaSweeper(KeyedSweeper):
    name: str = "Lambda"
    prefix = NAME_PREFIX
    account = ACCOUNT
    api = "skyward_lambda.api:LambdaAPI"
    listing = "the key lists the account's instances"

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.instances())

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.instance(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.terminate(machine_id)

    def gone(self, row: Row | None) -> bool:
        from skyward_lambda.api import gone

        return gone(row)

    def in_region(self, row: Row, region: str) -> bool:
        return _region(row) == region.lower()

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        kind = row.get("instance_type") if isinstance(row.get("instance_type"), dict) else {}
        cents = kind.get("price_cents_per_hour")
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row.get("id")),
            instance_type=str(kind.get("name") or "?"),
            region=_region(row) or "?",
            state=str(row.get("status") or "?"),
            launched_at=parse_time(row.get("created_at")),
            hourly_price=float(cents) / 100 if isinstance(cents, (int, float)) else None,
        )

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        """The login keys (`skyward-<pool>`) of `pools` that have no VM left."""
        from skyward_lambda.api import gone

        busy = {found[0] for row in await api.instances() if not gone(row) and (found := self.pool_of(row))}
        keys = await api.ssh_keys()
        items: list[Ended] = []
        for pool in sorted(set(pools) - busy):
            ids = [str(k["id"]) for k in keys if k.get("name") == f"{NAME_PREFIX}{pool}"]
            items += await self.delete_resources(pool, "ssh-key", ids, api.delete_ssh_key)
        return items


def _region(row: Row) -> str:
    region = row.get("region")
    return str(region.get("name") or "") if isinstance(region, dict) else ""


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return LambdaSweeper().verify(status)
