"""Skyward's VMs on Hyperstack found and deleted without a pool: its answer to `sky ls` / `sky down`.

A VM is Skyward's when its name is `skyward-<pool>-<node>` (`machine.vm_name`); nothing else is
listed or deleted, and `end` reads each VM back by id before deleting it. A pool also leaves its
login keypair (`skyward-<pool>`, one per region it used): once a pool has no VM left, `end`
deletes those too. The key is `$HYPERSTACK_API_KEY`; `$HYPERSTACK_API_URL` points the command at
another endpoint. Hyperstack has no lease: its VMs never count as expired.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import KeyedSweeper, Row
from skyward.providers.sweep import Ended, Machine, parse_time
from skyward_hyperstack.account import ACCOUNT
from skyward_hyperstack.machine import NAME_PREFIX

#: Where `rows` puts a VM's price per hour (the API's row does not carry one).
PRICE_FIELD = "skyward_hourly_price"


def _region(row: Row) -> str:
    environment = row.get("environment")
    return str(environment.get("region") or "?") if isinstance(environment, dict) else "?"


@attrs.define
class HyperstackSweeper(KeyedSweeper):
    name: str = "Hyperstack"
    prefix = NAME_PREFIX
    account = ACCOUNT
    api = "skyward_hyperstack.api:HyperstackAPI"
    listing = "the API key lists the account's VMs"

    async def count(self, api: Any) -> int:
        """A credential check counts every VM of the account (one listing, no pricebook)."""
        return len(await api.vms())

    async def rows(self, api: Any) -> list[Row]:
        """Skyward's VMs, each with its flavor's price from the pricebook (None: not listed)."""
        from skyward_hyperstack.catalog import Flavor

        rows = await api.vms(search=NAME_PREFIX)
        prices = await api.pricebook()
        for row in rows:
            flavor = row.get("flavor")
            known = isinstance(flavor, dict) and flavor.get("name")
            row[PRICE_FIELD] = (Flavor.from_api(flavor, prices).price if known else 0) or None
        return rows

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.vm(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.delete_vm(machine_id)

    def gone(self, row: Row | None) -> bool:
        from skyward_hyperstack.api import gone

        return gone(row)

    def in_region(self, row: Row, region: str) -> bool:
        return _region(row) == region.upper()

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        flavor = row.get("flavor") if isinstance(row.get("flavor"), dict) else {}
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row.get("id")),
            instance_type=str(flavor.get("name") or "?"),
            region=_region(row),
            state=str(row.get("status") or "?"),
            launched_at=parse_time(row.get("created_at")),
            hourly_price=row.get(PRICE_FIELD),
        )

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        """The login keypairs of `pools` that have no VM left."""
        rows = await api.vms(search=NAME_PREFIX)
        busy = {found[0] for row in rows if not self.gone(row) and (found := self.pool_of(row))}
        items: list[Ended] = []
        wanted = {f"{NAME_PREFIX}{pool}": pool for pool in set(pools) - busy}
        for keypair in await api.keypairs():
            pool = wanted.get(str(keypair.get("name")))
            if pool is None:
                continue
            try:
                await api.delete_keypair(str(keypair["id"]))
            except Exception as exc:  # noqa: BLE001 - reported beside the others
                items.append(Ended(self.name, pool, "keypair", str(keypair["id"]), str(exc)))
            else:
                items.append(Ended(self.name, pool, "keypair", str(keypair["id"])))
        return items


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return HyperstackSweeper().verify(status)
