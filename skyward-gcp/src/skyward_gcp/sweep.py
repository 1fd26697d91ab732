"""Skyward's VMs on Compute Engine found and deleted without a pool: GCP's answer to `sky ls` / `sky down`.

A VM is Skyward's when its name is `skyward-<pool>-<node>` and its labels say the same pool and
node (`machine.pool_of`); the project's VMs are listed across zones with a label filter
(`aggregated/instances`), and `end` reads each VM back just before deleting it. A pool also
leaves its firewall rule (`skyward-<pool>-ssh`): once a pool has no VM left, `end` deletes it.
The credentials are Application Default Credentials; the project is `$GOOGLE_CLOUD_PROJECT`,
else the credentials'; `$GCP_API_ENDPOINT` points the command at another endpoint. Compute
Engine VMs carry no lease here: they never count as expired (their guardians end them).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import NamedSweeper, Row
from skyward.providers.sweep import Ended, Machine, parse_time
from skyward_gcp.account import locate_credentials
from skyward_gcp.machine import POOL_LABEL, firewall_name, pool_of

ENDPOINT_VARIABLE = "GCP_API_ENDPOINT"


def row_of(instance: Any) -> Row:
    """A Compute Engine instance as the sweeper's row."""
    zone = str(instance.zone).rsplit("/", 1)[-1]
    return {
        "id": f"{zone}/{instance.name}/{instance.id}",
        "name": instance.name,
        "zone": zone,
        "labels": dict(instance.labels),
        "status": instance.status,
        "machine_type": str(instance.machine_type).rsplit("/", 1)[-1],
        "spot": instance.scheduling.provisioning_model == "SPOT",
        "created": instance.creation_timestamp,
    }


@attrs.define
class GCPSweeper(NamedSweeper):
    name: str = "GCP"
    listing = "the credentials list the project's VMs"

    def credentials(self) -> CredentialStatus:
        return locate_credentials()

    def client(self) -> Any:
        from skyward_gcp.account import resolve_account
        from skyward_gcp.api import ComputeApi

        return ComputeApi(resolve_account(None), os.environ.get(ENDPOINT_VARIABLE) or None)

    async def rows(self, api: Any) -> list[Row]:
        return [row_of(i) for i in await api.instances(label_filter=f"labels.{POOL_LABEL}:*")]

    async def row(self, api: Any, machine_id: str) -> Row | None:
        """The VM with this id, None once gone (or replaced by another VM of the same name)."""
        zone, name, number = (machine_id.split("/") + ["", ""])[:3]
        found = await api.instance(zone, name)
        return None if found is None or str(found.id) != number else row_of(found)

    async def delete(self, api: Any, machine_id: str) -> object:
        zone, name = machine_id.split("/")[:2]
        return await api.delete_instance(zone, name)

    def pool_of(self, row: Row | None) -> tuple[str, int] | None:
        return None if row is None else pool_of(row.get("name"), row.get("labels"))

    def in_region(self, row: Row, region: str) -> bool:
        return str(row.get("zone")).startswith(f"{region}-") or row.get("zone") == region

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row["id"]),
            instance_type=str(row["machine_type"]) + (" (spot)" if row["spot"] else ""),
            region=str(row["zone"]),
            state=str(row["status"]).lower(),
            launched_at=parse_time(row["created"]),
        )

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        """The firewall rules of `pools` that have no VM left."""
        busy = {found[0] for row in await self.rows(api) if (found := self.pool_of(row))}
        items: list[Ended] = []
        for pool in sorted(set(pools) - busy):
            name = firewall_name(pool)
            if not await api.firewalls(f'name = "{name}"'):
                continue
            try:
                await api.delete_firewall(name)
            except Exception as exc:  # noqa: BLE001 - reported beside the others
                items.append(Ended(self.name, pool, "firewall-rule", name, str(exc)))
            else:
                items.append(Ended(self.name, pool, "firewall-rule", name))
        return items


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing of the project's Skyward VMs through the sweeper
    (`NamedSweeper.verify`)."""
    return GCPSweeper().verify(status)
