"""Skyward's servers on Scaleway found and terminated without a pool: Scaleway's answer to `sky ls`
/ `sky down`.

A server is Skyward's when it carries the `skyward` tag and its name is `skyward-<pool>-<node>`
(`machine.server_name`); the listing asks Scaleway for the tag in each zone (`$SCW_DEFAULT_ZONE`,
else every GPU zone), and nothing else is listed or ended; `end` reads each server back by id just
before terminating it, and deletes its Block Storage volumes once it is gone (`terminate` only
detaches them). A server its own guardian terminated leaves its boot volume detached, billing,
with no server to find it by: the volume carries the server's name and the tag (given at
creation), so it is listed too, as a row of its own (`<zone>/volume/<id>`, state `detached`, its
lease lapsed: nothing will use it again), and `sky down` (`--expired` included) deletes it. A pool also leaves its security group (named `skyward-<pool>`): once a pool
has no server left, `end` deletes it too. The credentials are the environment's or the CLI
profile's; `$SCW_API_URL` points the command at another endpoint. No expiry lease is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import NamedSweeper, Row
from skyward.providers.rest import delete_retrying
from skyward.providers.sweep import Ended, Machine, named_pool
from skyward_scaleway.account import TAG, locate, zones
from skyward_scaleway.api import block_volumes
from skyward_scaleway.machine import NAME_PREFIX, zone_of

#: How often, and how many times, `end` reads a terminated server back before deleting its volumes.
GONE_WAIT = 2.0
GONE_READS = 60


#: The part of a listed row's id that marks a detached volume, not a server.
VOLUME = "volume/"


def volume_row(zone: str, volume: Any) -> Row:
    """A detached Skyward volume as the sweeper reads it (its id `<zone>/volume/<volume id>`)."""
    size = int(getattr(volume, "size", 0) or 0) // 10**9
    return {
        "id": f"{zone}/{VOLUME}{volume.id}",
        "name": volume.name,
        "tags": list(volume.tags or []),
        "state": "detached",
        "commercial_type": f"block volume, {size} GB",
        "zone": zone,
        "creation_date": volume.created_at,
        "detached_at": volume.last_detached_at or volume.created_at,
    }


def detached(volume: Any) -> bool:
    """Whether a volume is attached to nothing (a server's own termination leaves it so)."""
    return not volume.references and str(volume.status) == "available"


def row_of(zone: str, server: Any) -> Row:
    """A server as the sweeper reads it (its id `<zone>/<server id>`)."""
    return {
        "id": f"{zone}/{server.id}",
        "name": server.name,
        "tags": list(server.tags or []),
        "state": str(server.state),
        "commercial_type": server.commercial_type,
        "zone": zone,
        "creation_date": server.creation_date,
    }


@attrs.define
class ScalewaySweeper(NamedSweeper):
    name: str = "Scaleway"
    listing = "the key lists the project's servers"
    prefix = NAME_PREFIX

    def credentials(self) -> CredentialStatus:
        return locate()

    def client(self) -> Any:
        from skyward_scaleway.offers import open_api

        return open_api(None)

    def pool_of(self, row: Row | None) -> tuple[str, int] | None:
        """(pool, node) of a server with Skyward's tag and name; None for any other."""
        if TAG not in ((row or {}).get("tags") or []):
            return None
        return named_pool(self.prefix, (row or {}).get(self.name_field))

    async def rows(self, api: Any) -> list[Row]:
        rows: list[Row] = []
        for zone in zones():
            rows += [row_of(zone, server) for server in await api.servers(zone)]
            rows += [volume_row(zone, volume) for volume in await api.volumes(zone) if detached(volume)]
        return rows

    async def row(self, api: Any, machine_id: str) -> Row | None:
        zone, server_id = zone_of(machine_id)
        if server_id.startswith(VOLUME):
            volume = await api.volume(zone, server_id.removeprefix(VOLUME))
            return None if volume is None or not detached(volume) else volume_row(zone, volume)
        server = await api.server(zone, server_id)
        return None if server is None else row_of(zone, server)

    async def delete(self, api: Any, machine_id: str) -> object:
        """Terminate the server, then, once Scaleway no longer lists it, delete the Block Storage
        volumes `terminate` only detached (they would bill on); a detached volume listed on its
        own is deleted."""
        zone, server_id = zone_of(machine_id)
        if server_id.startswith(VOLUME):
            return await api.delete_volume(zone, server_id.removeprefix(VOLUME))
        server = await api.server(zone, server_id)
        volumes = block_volumes(server) if server is not None else []
        await api.action(zone, server_id, "terminate", gone_ok=True)
        for _ in range(GONE_READS):
            if await api.server(zone, server_id) is None:
                break
            await asyncio.sleep(GONE_WAIT)
        for volume in volumes:
            await delete_retrying(
                lambda volume=volume: api.delete_volume(zone, volume),
                cloud="Scaleway",
                what=f"block volume {volume} in {zone}",
                where="the Scaleway console (Storage -> Block Storage)",
                delay=GONE_WAIT,
            )
        return None

    def gone(self, row: Row | None) -> bool:
        return row is None

    def in_region(self, row: Row, region: str) -> bool:
        return str(row.get("zone")) == region or str(row.get("zone")).startswith(region + "-")

    def machine(self, row: Row, pool: str, node: int) -> Machine:
        return Machine(
            provider=self.name,
            pool=pool,
            node=node,
            id=str(row.get("id")),
            instance_type=str(row.get("commercial_type") or "?"),
            region=str(row.get("zone") or "?"),
            state=str(row.get("state") or "?"),
            launched_at=row.get("creation_date"),
            hourly_price=None,
            lease_expires=row.get("detached_at"),  # a leftover volume: nothing will use it again
        )

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        """The security groups of `pools` that have no server left."""
        busy = {found[0] for row in await self.rows(api) if (found := self.pool_of(row))}
        items: list[Ended] = []
        for pool in set(pools) - busy:
            name = f"{NAME_PREFIX}{pool}"
            for zone in zones():
                groups = [str(g.id) for g in await api.security_groups(zone, name) if g.name == name]
                items += await self.delete_resources(
                    pool, "security-group", groups, lambda g, zone=zone: api.delete_security_group(zone, g)
                )
        return items


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one listing through the sweeper (`NamedSweeper.verify`)."""
    return ScalewaySweeper().verify(status)
