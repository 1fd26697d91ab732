"""Skyward's VMs on TensorDock found and deleted without a pool: `sky ls` / `sky down`.

TensorDock has no tags: a VM is Skyward's when its name is `skyward-<pool>-<node>`
(`machine.instance_name`). Nothing else is listed or deleted, and `end` reads each VM back by its
uuid before deleting it. A pool registers nothing beside its VMs (its login key goes with each
deploy), so nothing else is left to delete. The pair is `$TENSORDOCK_API_KEY` and
`$TENSORDOCK_API_TOKEN`; `$TENSORDOCK_API_URL` points the command at another endpoint. No lease is
kept on the cloud's side: its VMs never count as expired.
"""

from __future__ import annotations

import email.utils
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import NamedSweeper, Row
from skyward.providers.sweep import Machine, parse_time
from skyward_tensordock.account import env_url, locate_credentials
from skyward_tensordock.machine import NAME_PREFIX


@attrs.define
class TensorDockSweeper(NamedSweeper):
    name: str = "TensorDock"
    listing = "the pair lists the organization's VMs"
    prefix = NAME_PREFIX
    name_field = "name"

    def credentials(self) -> CredentialStatus:
        return locate_credentials()

    def client(self) -> Any:
        from skyward_tensordock.account import resolve_credentials
        from skyward_tensordock.api import TensorDockAPI

        return TensorDockAPI(resolve_credentials(), env_url())

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.vms())

    async def row(self, api: Any, machine_id: str) -> Row | None:
        found = await api.vm(machine_id)
        return None if found is None else {**found, "id": machine_id}

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.delete(machine_id)

    def in_region(self, row: Row, region: str) -> bool:
        wanted = region.lower()
        return any(str(row.get(k) or "").lower() == wanted for k in ("city", "state", "country"))

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        try:
            hourly = float(row["total_price"]) if row.get("total_price") is not None else None
        except (TypeError, ValueError):
            hourly = None
        specs = row.get("specs") if isinstance(row.get("specs"), dict) else {}
        gpu = specs.get("gpu") if isinstance(specs.get("gpu"), dict) else {}
        where = ", ".join(str(row[k]) for k in ("city", "country") if row.get(k))
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row.get("id")),
            instance_type=str(gpu.get("type") or "?"),
            region=where or "?",
            state=str(row.get("status") or "?"),
            launched_at=_created(row.get("timestamp_creation")),
            hourly_price=hourly,
        )


def _created(text: object) -> Any:
    """TensorDock writes times as HTTP dates ("Mon, 03 Jul 2023 12:00:00 GMT"); ISO ones too."""
    try:
        return email.utils.parsedate_to_datetime(str(text))
    except (TypeError, ValueError):
        return parse_time(text)


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return TensorDockSweeper().verify(status)
