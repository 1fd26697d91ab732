"""Skyward's instances on JarvisLabs found and destroyed without a pool: `sky ls` / `sky down`.

JarvisLabs has no tags: an instance is Skyward's when its name is `skyward-<pool>-<node>`
(`machine.instance_name`). Nothing else is listed or destroyed, and `end` reads each instance
back by id before destroying it; paused instances are listed and destroyed too (they bill their
disk). A pool's startup scripts left on the account (a client killed before its instances were
handed over; they hold the account's key) are deleted with its instances. The key is
`$JL_API_KEY`; `$JL_API_URL` points the command at another endpoint. No lease is kept on the
cloud's side: its instances never count as expired.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import NamedSweeper, Row
from skyward.providers.naming import of_pool
from skyward.providers.sweep import Ended, Machine
from skyward_jarvislabs.account import env_url, locate_api_key
from skyward_jarvislabs.machine import NAME_PREFIX


@attrs.define
class JarvisLabsSweeper(NamedSweeper):
    name: str = "JarvisLabs"
    listing = "the key lists the account's instances"
    prefix = NAME_PREFIX
    name_field = "name"

    def credentials(self) -> CredentialStatus:
        return locate_api_key()

    def client(self) -> Any:
        from skyward_jarvislabs.account import resolve_api_key
        from skyward_jarvislabs.api import JarvisAPI

        return JarvisAPI(resolve_api_key(None), env_url())

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.instances())

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.instance(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        row = await api.instance(machine_id)
        if row is None:
            return None
        return await api.destroy(machine_id, str(row.get("region") or ""), str(row.get("template") or ""))

    def gone(self, row: Row | None) -> bool:
        from skyward_jarvislabs.api import gone

        return gone(row)

    def in_region(self, row: Row, region: str) -> bool:
        return str(row.get("region") or "") == region

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        ended: list[Ended] = []
        scripts = await api.scripts()
        for pool in pools:
            ids = [i for i, name in scripts if of_pool(name, pool.lower()) is not None]
            ended += await self.delete_resources(pool, "startup-script", ids, api.delete_script)
        return ended

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        try:
            hourly = float(row["cost"]) if row.get("cost") is not None else None
        except (TypeError, ValueError):
            hourly = None
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row.get("machine_id")),
            instance_type=f"{row.get('num_gpus') or '?'}x {row.get('gpu_type') or '?'}",
            region=str(row.get("region") or "?"),
            state=str(row.get("status") or "?"),
            launched_at=None,
            hourly_price=hourly,
        )


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return JarvisLabsSweeper().verify(status)
