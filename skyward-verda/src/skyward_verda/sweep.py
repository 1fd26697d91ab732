"""Skyward's VMs on Verda found and deleted without a pool: Verda's answer to `sky ls` / `sky down`.

Verda has no tags: a VM is Skyward's when its hostname is `skyward-<pool>-<node>`
(`machine.hostname`). Nothing else is listed or deleted, and `end` reads each VM back by id
before deleting it. A pool also leaves its nodes' startup scripts (named like the VMs; they hold
the host key and the account's credentials) and its login key (`skyward-<pool>`): once a pool has
no VM left, `end` deletes those too. The credentials are `$VERDA_CLIENT_ID` /
`$VERDA_CLIENT_SECRET`; `$VERDA_API_URL` points the command at another endpoint. Verda has no
lease: its VMs never count as expired.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import NamedSweeper, Row
from skyward.providers.sweep import Ended, Machine, named_pool, parse_time
from skyward_verda.account import API_URL, locate_credentials
from skyward_verda.machine import NAME_PREFIX

URL_VARIABLE = "VERDA_API_URL"


def pool_of(row: dict[str, Any] | None) -> tuple[str, int] | None:
    """(pool, node) of a VM Skyward deployed, read from its hostname; None for any other."""
    return named_pool(NAME_PREFIX, (row or {}).get("hostname"))


@attrs.define
class VerdaSweeper(NamedSweeper):
    name: str = "Verda"
    prefix = NAME_PREFIX
    name_field = "hostname"
    listing = "the credentials list the account's VMs"

    def credentials(self) -> CredentialStatus:
        return locate_credentials()

    def client(self) -> Any:
        from skyward_verda.account import resolve_credentials
        from skyward_verda.api import VerdaAPI

        return VerdaAPI(resolve_credentials(None, None), os.environ.get(URL_VARIABLE) or API_URL)

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.instances())

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.instance(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.delete_instances([machine_id])

    def gone(self, row: Row | None) -> bool:
        from skyward_verda.api import gone

        return gone(row)

    def in_region(self, row: Row, region: str) -> bool:
        return str(row.get("location")) == region.upper()

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        price = row.get("price_per_hour")
        try:
            hourly = float(price) if price is not None else None
        except (TypeError, ValueError):
            hourly = None
        return Machine(
            provider=self.name, pool=pool, node=node, id=str(row.get("id")),
            instance_type=str(row.get("instance_type") or "?") + (" (spot)" if row.get("is_spot") else ""),
            region=str(row.get("location") or "?"), state=str(row.get("status") or "?"),
            launched_at=parse_time(row.get("created_at")), hourly_price=hourly,
        )

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        """The startup scripts and login keys of `pools` that have no VM left."""
        from skyward_verda.api import gone

        busy = {found[0] for row in await api.instances() if not gone(row) and (found := pool_of(row))}
        items: list[Ended] = []
        for pool in set(pools) - busy:
            scripts = [
                s for s in await api.scripts() if (pool_of({"hostname": s.get("name")}) or ("",))[0] == pool
            ]
            keys = [k for k in await api.ssh_keys() if k.get("name") == f"{NAME_PREFIX}{pool}"]
            for kind, rows, delete in (
                ("startup-script", scripts, api.delete_script), ("ssh-key", keys, api.delete_ssh_key)
            ):
                for row in rows:
                    try:
                        await delete(str(row["id"]))
                    except Exception as exc:  # noqa: BLE001 - reported beside the others
                        items.append(Ended(self.name, pool, kind, str(row["id"]), str(exc)))
                    else:
                        items.append(Ended(self.name, pool, kind, str(row["id"])))
        return items



def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return VerdaSweeper().verify(status)
