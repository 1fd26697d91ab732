"""`VerdaProvider`: a pool's VMs, deployed, read back and deleted through Verda's API.

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` checks the
credentials, finds the instance types that fit the spec and registers the pool's login key;
`launch` deploys one VM per node with its own startup script (`machine`), trying the offers
(type, location, spot or not) in order and falling over to the next one when Verda has no
capacity, raising `CapacityError` for the base to retry when none has; `refresh` hands a VM over
once it runs and its sshd presents the pool's host key; `destroy` deletes VMs and waits until
Verda no longer lists them; `release` removes the scripts and the key. No expiry lease is renewed:
Verda has no tags, and a VM's hostname is its pool identity, so a VM whose client is gone is
ended by the node's guardian alone.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import ProvisionError
from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.probe import HOST_KEY_GRACE, PinnedKeyWait
from skyward.providers.rented import RentedCloud, named_leftovers, rented_instance
from skyward.providers.ssh import head_port
from skyward_verda.account import resolve_credentials
from skyward_verda.api import LOGGER, VerdaAPI, gone
from skyward_verda.catalog import InstanceType
from skyward_verda.machine import end_command, hostname, startup_script
from skyward_verda.pricing import instance_types, locations_for, offers

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_verda.config import Verda

#: How long a running VM may answer with its image's host key before it is handed over (and
#: then refused by the pinned check): the startup script restarts sshd with ours within seconds.
GRACE = HOST_KEY_GRACE


class VerdaProvider(RentedCloud):
    name = "verda"
    cloud = "Verda"
    console = "the Verda console"
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None
    #: A parked pool's startup scripts and key are in `cluster.state`; `resume_cloud` sets its
    #: scripts aside (they hold the parked pool's host key) for new ones, all deleted at release.
    lingers = True

    def __init__(self, config: Verda, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        self.credentials = resolve_credentials(config.client_id, config.client_secret)
        self.api = VerdaAPI(self.credentials, config.url)
        self._log = structlog.get_logger(LOGGER)
        self._host_keys = PinnedKeyWait(GRACE)

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.url, hostname(cluster.id, instance.node))

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the credentials, find the fitting types, register the login key; rent nothing."""
        assert self.access is not None
        try:
            types = await instance_types(self.api, spec)
            key_id = await self.api.add_ssh_key(f"skyward-{pool_id}", self.access.login_key)
        except BaseException:
            await self.api.close()  # teardown may never come for a pool that failed this early
            raise
        self._log.info(
            "skyward.verda_plan", pool=pool_id, types=[t.name for t in types], image=self.config.image
        )
        return Cluster(
            id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id),
            state={"types": tuple(types), "ssh_key": key_id},
        )

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The offers Verda can start now, in the order the allocation says."""
        types: tuple[InstanceType, ...] = cluster.state["types"]
        return await offers(self.api, cluster.spec, list(types), locations_for(self.config, cluster.spec))

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no location has the fitting types free"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        instance_id = await self.api.create_instance(await self._request(cluster, node, offer))
        return rented_instance(
            instance_id, node, offer, ssh_user=self.config.ssh_user, ssh_port=self.config.ssh_port
        )

    async def _request(self, cluster: Cluster, node: int, offer: Rental) -> dict[str, Any]:
        """The `POST /instances` body, with the node's startup script saved first (once)."""
        assert self.access is not None
        host = hostname(cluster.id, node)
        scripts = _scripts(cluster)
        if node not in scripts:
            guardian = self.boot_guardian(cluster, node, end_command(self.config.url, host))
            script = startup_script(self.access, self.credentials, guardian)
            scripts[node] = await self.api.add_script(host, script)
        return {
            "instance_type": offer.ref.name,
            "image": self.config.image,
            "ssh_key_ids": [cluster.state["ssh_key"]],
            "startup_script_id": scripts[node],
            "hostname": host,
            "description": f"Skyward pool {cluster.id}, node {node}",
            "location_code": offer.offer.region,
            "os_volume": {"name": f"{host}-os", "size": int(cluster.spec.disk_gb or self.config.disk_gb)},
            "is_spot": offer.spot,
        }

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        rows = await asyncio.gather(*(self.api.instance(i.id) for i in instances))
        ready = []
        for instance, row in zip(instances, rows, strict=True):
            where = f"Verda instance {instance.id} (node {instance.node})"
            if gone(row) or (row or {}).get("status") == "error":
                status = "deleted" if row is None else row.get("status")
                reclaimed = '; a spot VM may have been reclaimed: try allocation="on-demand"'
                hint = reclaimed if instance.spot else ""
                raise ProvisionError(f"{where} ended before it could be used ({status}){hint}")
            assert row is not None
            ip = row.get("ip")
            if row.get("status") != "running" or not ip:
                continue
            port = self.config.ssh_port
            if not await self._host_keys.ready(instance.id, str(ip), port, self.expected_host_key(instance)):
                continue
            ready.append(attrs.evolve(instance, public_ip=str(ip), private_ip=str(ip), ssh_port=port))
        return ready

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        await self.api.delete_instances([i.id for i in instances])
        for instance in instances:
            self._host_keys.forget(instance.id)

    async def machine_gone(self, instance: Instance) -> bool:
        return gone(await self.api.instance(instance.id))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """VMs named for this pool that Verda still lists (a deployment whose answer was lost)."""
        rows = await self.api.instances()
        return named_leftovers(rows, cluster.id, id_field="id", name_field="hostname", gone=gone)

    async def resume_cloud(self, cluster: Cluster) -> None:
        """A parked pool's startup scripts carry its machines' host key, not this pool's: a node
        launched from now on gets a new one; the old ones are deleted at release with the rest."""
        stale = [*cluster.state.get("stale_scripts", []), *_scripts(cluster).values()]
        cluster.state["stale_scripts"], cluster.state["scripts"] = stale, {}

    async def release(self, cluster: Cluster) -> None:
        """Delete the nodes' startup scripts (they hold the host key and credentials) and the
        pool's login key; the HTTP session is closed last."""
        try:
            scripts = _scripts(cluster)
            for script_id in [*scripts.values(), *cluster.state.get("stale_scripts", [])]:
                await self.api.delete_script(script_id)
            scripts.clear()
            cluster.state["stale_scripts"] = []
            if cluster.state.get("ssh_key"):
                await self.api.delete_ssh_key(cluster.state["ssh_key"])
        finally:
            await self.api.close()


def _scripts(cluster: Cluster) -> dict[int, str]:
    """The pool's startup scripts by node, kept in `cluster.state` (a parked pool's travel with it)."""
    scripts: dict[int, str] = cluster.state.setdefault("scripts", {})
    return scripts
