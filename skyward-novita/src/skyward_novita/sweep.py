"""Skyward's instances on Novita found and deleted without a pool: Novita's answer to `sky ls` /
`sky down`.

Novita has no tags: an instance is Skyward's when its name is `skyward-<pool>-<node>`
(`machine.instance_name`); nothing else is listed or deleted, and `end` reads each instance back
by id before deleting it. A pool creates nothing on Novita besides its instances. The key is
`$NOVITA_API_KEY`; `$NOVITA_API_URL` points the command at another endpoint. Novita has no
lease: its instances never count as expired.
"""

from __future__ import annotations

from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import KeyedSweeper, Row
from skyward.providers.sweep import Machine, parse_time
from skyward_novita.account import ACCOUNT
from skyward_novita.machine import NAME_PREFIX


@attrs.define
class NovitaSweeper(KeyedSweeper):
    name: str = "Novita"
    prefix = NAME_PREFIX
    account = ACCOUNT
    api = "skyward_novita.api:NovitaAPI"
    listing = "the credentials list the account's instances"

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.instances())

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.instance(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.delete(machine_id)

    def gone(self, row: Row | None) -> bool:
        from skyward_novita.api import gone

        return gone(row)

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        return Machine(
            provider=self.name, pool=pool, node=node, id=str(row.get("id")),
            instance_type=f"{row.get('gpuNum') or '?'}x {row.get('productName') or '?'}"
            + (" (spot)" if row.get("billingMode") == "spot" else ""),
            region=str(row.get("clusterName") or row.get("clusterId") or "?"),
            state=str(row.get("status") or "?"),
            launched_at=parse_time(row.get("createdAt")),
        )



def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return NovitaSweeper().verify(status)
