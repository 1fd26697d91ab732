"""Skyward's instances on Vultr found and deleted without a pool: Vultr's answer to `sky ls` / `sky down`.

An instance is Skyward's when it carries the `skyward` tag and its label is
`skyward-<pool>-<node>` (`machine.label`); the listing asks Vultr for the tag, and nothing else is
listed or deleted; `end` reads each instance back by id before deleting it. A pool also leaves its
login key (`skyward-<pool>`) and its firewall group (described `skyward-<pool>`): once a pool has
no instance left, `end` deletes those too. The key is `$VULTR_API_KEY`; `$VULTR_API_URL` points
the command at another endpoint. No expiry lease is written: Vultr's instances never count as
expired.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import KeyedSweeper, Row
from skyward.providers.sweep import Ended, Machine, named_pool, parse_time
from skyward_vultr.account import ACCOUNT, TAG
from skyward_vultr.machine import NAME_PREFIX


@attrs.define
class VultrSweeper(KeyedSweeper):
    name: str = "Vultr"
    prefix = NAME_PREFIX
    name_field = "label"
    account = ACCOUNT
    api = "skyward_vultr.api:VultrAPI"
    listing = "the key lists the account's instances"

    def pool_of(self, row: Row | None) -> tuple[str, int] | None:
        """(pool, node) of an instance with Skyward's tag and label; None for any other."""
        if TAG not in ((row or {}).get("tags") or []):
            return None
        return named_pool(self.prefix, (row or {}).get(self.name_field))

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.instances(tag=TAG))

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.instance(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.delete_instance(machine_id)

    def in_region(self, row: Row, region: str) -> bool:
        return str(row.get("region")) == region.lower()

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row.get("id")),
            instance_type=str(row.get("plan") or "?"),
            region=str(row.get("region") or "?"),
            state=str(row.get("power_status") or row.get("status") or "?"),
            launched_at=parse_time(row.get("date_created")),
            hourly_price=None,
        )

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        """The login keys and firewall groups of `pools` that have no instance left."""
        busy = {found[0] for row in await api.instances(tag=TAG) if (found := self.pool_of(row))}
        items: list[Ended] = []
        for pool in set(pools) - busy:
            name = f"{NAME_PREFIX}{pool}"
            keys = [str(k["id"]) for k in await api.ssh_keys() if k.get("name") == name]
            groups = [str(g["id"]) for g in await api.firewalls() if g.get("description") == name]
            items += await self.delete_resources(pool, "ssh-key", keys, api.delete_ssh_key)
            items += await self.delete_resources(pool, "firewall-group", groups, api.delete_firewall)
        return items


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing of the account's Skyward instances through the
    sweeper (`NamedSweeper.verify`)."""
    return VultrSweeper().verify(status)
