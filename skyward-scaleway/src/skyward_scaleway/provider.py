"""`ScalewayProvider`: a pool's servers, created, read back and terminated through Scaleway's
Instance API (the `scaleway` SDK, `api.py`).

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` checks the credentials,
finds the commercial types that fit the spec and makes the pool's security group in each zone it
may use (inbound dropped but SSH from this client's address); `launch` creates one server per node
(stopped, tagged `skyward`, named `skyward-<pool>-<node>`), sets its cloud-init user data
(`machine`) and powers it on, trying the offers (type, zone) cheapest first and falling over to
the next when Scaleway answers `out_of_stock`; `refresh` hands a server over once it runs and its
sshd presents the pool's host key; `destroy` terminates servers, waits until Scaleway no longer
lists them and deletes their Block Storage volumes (which `terminate` only detaches, and which
carry their server's name and Skyward's tag from its creation, for the sweep); `release` deletes the security groups. An Instance id is `<zone>/<server id>`: the API
is zonal. A server whose client is gone is terminated by the node's guardian.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import ProvisionError
from skyward.market.rental import Rental
from skyward.providers.address import client_cidr
from skyward.providers.base import Cluster, Instance
from skyward.providers.probe import HOST_KEY_GRACE, PinnedKeyWait
from skyward.providers.rented import RentedCloud, named_leftovers, rented_instance
from skyward.providers.rest import delete_retrying
from skyward.providers.ssh import head_port
from skyward_scaleway.account import TAG, resolve
from skyward_scaleway.api import LOGGER, ScalewayAPI, block_volumes
from skyward_scaleway.machine import end_command, server_name, user_data, zone_of
from skyward_scaleway.offers import rentals, types_for

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_scaleway.config import Scaleway

#: How long a running server may answer with its image's host key before it is handed over (and
#: then refused by the pinned check): cloud-init restarts sshd with ours within seconds.
GRACE = HOST_KEY_GRACE


def address_of(server: Any) -> str:
    """The server's public IPv4 address ("" until it has one)."""
    ips = [ip for ip in getattr(server, "public_ips", None) or [] if getattr(ip, "family", "inet") == "inet"]
    found = ips[0] if ips else getattr(server, "public_ip", None)
    return str(getattr(found, "address", "") or "")


class ScalewayProvider(RentedCloud):
    name = "scaleway"
    cloud = "Scaleway"
    console = "the Scaleway console (Compute -> Instances)"
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None
    #: A parked pool's security groups are in `cluster.state`; each server's user data is built
    #: when it is created, so an adopting pool needs nothing restored.
    lingers = True

    def __init__(self, config: Scaleway, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        credentials = resolve(config.access_key, config.secret_key, config.project_id)
        self.guardian_key = config.guardian_secret_key or credentials.secret_key
        self.api = ScalewayAPI(credentials, config.url)
        self._log = structlog.get_logger(LOGGER)
        self._host_keys = PinnedKeyWait(GRACE)
        #: The Block Storage volumes of each server being ended, deleted once it is gone.
        self._volumes: dict[str, list[str]] = {}

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        zone, _ = zone_of(instance.id)
        return end_command(self.config.url, zone, server_name(cluster.id, instance.node), TAG)

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the credentials and the types, make the security groups; rent nothing."""
        assert self.access is not None
        groups: dict[str, str] = {}
        zones = self.config.zones_for(spec)
        try:
            kinds = await types_for(self.api, spec, zones)
            cidr = self.config.ssh_cidr or await asyncio.to_thread(self._client_cidr)
            for zone in sorted({k.zone for k in kinds}):
                groups[zone] = await self.api.add_security_group(zone, f"skyward-{pool_id}")
                await self.api.allow(zone, groups[zone], cidr, self.config.ssh_port)
        except BaseException:
            await asyncio.shield(self._remove(groups))  # no cluster, so no teardown would
            raise
        self._log.info("skyward.scaleway_plan", pool=pool_id, types=[k.name for k in kinds], ssh_from=cidr)
        return Cluster(
            id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id), state={"groups": groups}
        )

    def _client_cidr(self) -> str:
        try:
            return client_cidr(self.config.ip_lookup_url)
        except ProvisionError as exc:
            raise ProvisionError(
                f"{exc}; Scaleway opens SSH only to this client: pass Scaleway(ssh_cidr=...) with the "
                "address range the client connects from"
            ) from None

    async def _remove(self, groups: dict[str, str]) -> None:
        for zone, group in groups.items():
            with contextlib.suppress(ProvisionError):
                await self.api.delete_security_group(zone, group)

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The fitting types in the zones the pool has a security group in, cheapest first."""
        zones = tuple(cluster.state["groups"])
        return await rentals(self.api, cluster.spec, zones)

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "every fitting type is out of stock"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        """Create the server stopped, give it its cloud-init, power it on; a server that cannot
        be powered on (out of stock now) is deleted before the error moves on to the next offer."""
        assert self.access is not None
        zone, name = offer.ref.zone, server_name(cluster.id, node)
        server = await self.api.create_server(
            zone,
            commercial_type=offer.ref.name,
            name=name,
            image=self.config.image,
            tags=[TAG],
            security_group=cluster.state["groups"][zone],
            dynamic_ip_required=True,
        )
        try:
            for volume in block_volumes(server):
                await self.api.mark_volume(zone, volume, name)
            guardian = self.boot_guardian(cluster, node, end_command(self.config.url, zone, name, TAG))
            await self.api.set_cloud_init(
                zone, server.id, user_data(self.access, self.guardian_key, guardian)
            )
            await self.api.action(zone, server.id, "poweron")
        except BaseException:
            await asyncio.shield(self._discard(zone, server))
            raise
        config = self.config
        return rented_instance(
            f"{zone}/{server.id}", node, offer, ssh_user=config.ssh_user, ssh_port=config.ssh_port
        )

    async def _discard(self, zone: str, server: Any) -> None:
        """Delete a server that never powered on, and its volumes (a deleted server detaches them)."""
        await self.api.delete_server(zone, server.id)
        for volume in block_volumes(server):
            with contextlib.suppress(ProvisionError):
                await self.api.delete_volume(zone, volume)

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        servers = await asyncio.gather(*(self.api.server(*zone_of(i.id)) for i in instances))
        ready = []
        for instance, server in zip(instances, servers, strict=True):
            state = "deleted" if server is None else str(server.state)
            if state in ("deleted", "stopped", "stopped_in_place", "locked"):
                where = f"Scaleway server {instance.id} (node {instance.node})"
                raise ProvisionError(f"{where} ended before it could be used ({state})")
            ip = address_of(server)
            if state != "running" or not ip:
                continue
            port = self.config.ssh_port
            if not await self._host_keys.ready(instance.id, ip, port, self.expected_host_key(instance)):
                continue
            private = str(getattr(server, "private_ip", "") or "") or ip
            ready.append(attrs.evolve(instance, public_ip=ip, private_ip=private, ssh_port=port))
        return ready

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        await asyncio.gather(*(self._end(instance.id) for instance in instances))
        for instance in instances:
            self._host_keys.forget(instance.id)

    async def _end(self, instance_id: str) -> None:
        """`terminate` a server that runs; `DELETE` one that never powered on."""
        zone, server_id = zone_of(instance_id)
        server = await self.api.server(zone, server_id)
        if server is None:
            return
        self._volumes[instance_id] = block_volumes(server)
        if str(server.state) == "stopped":
            await self.api.delete_server(zone, server_id)
        else:
            await self.api.action(zone, server_id, "terminate", gone_ok=True)

    async def destroy(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Terminate the servers and wait until they are gone (`RentedCloud.destroy`), then delete
        their Block Storage volumes (retried while Scaleway still detaches them)."""
        await super().destroy(cluster, instances)
        for instance in instances:
            zone, _ = zone_of(instance.id)
            for volume in self._volumes.pop(instance.id, []):
                await delete_retrying(
                    lambda zone=zone, volume=volume: self.api.delete_volume(zone, volume),
                    cloud=self.cloud,
                    what=f"block volume {volume} in {zone}",
                    where="the Scaleway console (Storage -> Block Storage)",
                    delay=self.poll_interval,
                )

    async def machine_gone(self, instance: Instance) -> bool:
        return await self.api.server(*zone_of(instance.id)) is None

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """Servers tagged and named for this pool that Scaleway still lists (a creation whose
        answer was lost)."""
        rows = [
            {"id": f"{zone}/{server.id}", "name": server.name}
            for zone in cluster.state.get("groups", {})
            for server in await self.api.servers(zone, name=f"skyward-{cluster.id}")
        ]
        return named_leftovers(rows, cluster.id, id_field="id", name_field="name")

    async def release(self, cluster: Cluster) -> None:
        """Delete the pool's security groups (retried: Scaleway refuses while a terminated server
        still holds one)."""
        for zone, group in cluster.state.get("groups", {}).items():
            await delete_retrying(
                lambda zone=zone, group=group: self.api.delete_security_group(zone, group),
                cloud=self.cloud,
                what=f"security group {group} in {zone}",
                where=self.console,
                delay=self.poll_interval,
            )
