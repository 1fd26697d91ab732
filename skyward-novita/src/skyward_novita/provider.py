"""`NovitaProvider`: a pool's GPU instances, created, read back and deleted through Novita's API.

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` checks the key and
that Novita has a product carrying the accelerator; `launch` creates one instance per node,
trying the offers (product, spot or not) in order and falling over to the next when Novita has
no capacity, raising `CapacityError` for the base to retry when none has; `refresh` reports
instances once Novita maps their port 22; `destroy` deletes them and waits until Novita no
longer lists them. Keys, host key pinning, waiting, bootstrap and workers are the base's. No
expiry lease is renewed: Novita has no tags, and an instance's name is its pool identity, so an
instance whose client is gone is ended by the node's guardian alone.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import ProvisionError
from skyward.guardian.boot import packed
from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.naming import of_pool
from skyward.providers.rented import RentedCloud
from skyward.providers.ssh import head_port
from skyward_novita.account import ACCOUNT
from skyward_novita.api import FAILED_STATUSES, LOGGER, NovitaAPI, gone
from skyward_novita.machine import (
    chunks,
    end_command,
    environment,
    instance_name,
    ssh_address,
    start_command,
    start_script,
)
from skyward_novita.pricing import offers

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_novita.config import Novita



class NovitaProvider(RentedCloud):
    name = "novita"
    cloud = "Novita"
    console = "the Novita console"
    #: A parked pool is adopted as it is: nothing of a pool is kept on the provider but its API.
    lingers = True
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None

    def __init__(self, config: Novita, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        self.api_key = ACCOUNT.resolve(config.api_key)
        self.api = NovitaAPI(self.api_key, config.url)
        self._log = structlog.get_logger(LOGGER)

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.url, instance_name(cluster.id, instance.node), instance.id)

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the key and that a product carries the accelerator; rent nothing."""
        try:
            found = await offers(self.api, spec, strict=True)
        except BaseException:
            await self.api.close()
            raise
        self._log.info("skyward.novita_plan", pool=pool_id, offers=[str(o) for o in found],
                       image=self.config.docker_image)
        return Cluster(id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id))

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The products Novita can start now, in the order the allocation says."""
        return await offers(self.api, cluster.spec)

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no product free"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        instance_id = await self.api.create_instance(self._request(cluster, node, offer))
        return Instance(
            id=instance_id, node=node, ssh_user=self.config.ssh_user, hourly_rate=offer.price,
            on_demand_rate=offer.on_demand_price, spot=offer.spot, instance_type=offer.offer.instance_type,
            vcpus=int(offer.offer.vcpus or 0), memory_gb=offer.offer.memory_gb or 0.0,
        )

    def _request(self, cluster: Cluster, node: int, offer: Rental) -> dict[str, Any]:
        """The `POST /gpu/instance/create` body (fields as Novita's "Create GPU Instance" documents)."""
        assert self.access is not None
        name = instance_name(cluster.id, node)
        source = packed()
        guardian = self.boot_guardian(cluster, node, end_command(self.config.url, name))
        script = start_script(self.access, guardian, len(chunks("SKYWARD_GUARDIAN", source)))
        env = environment(self.access, self.api_key, cluster.id, script, source)
        body: dict[str, Any] = {
            "name": name,
            "productId": offer.ref,
            "gpuNum": int(offer.offer.accelerator_count),
            "rootfsSize": int(cluster.spec.disk_gb or self.config.disk_gb),
            "imageUrl": self.config.docker_image,
            "ports": "22/tcp",
            "envs": [{"key": k, "value": v} for k, v in env.items()],
            "command": start_command(env),
            "kind": "gpu",
            "billingMode": "spot" if offer.spot else "onDemand",
        }
        if self.config.cluster_id:
            body["clusterId"] = self.config.cluster_id
        return body

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        rows = await asyncio.gather(*(self.api.instance(i.id) for i in instances))
        ready = []
        for instance, row in zip(instances, rows, strict=True):
            if gone(row) or str((row or {}).get("status")) in FAILED_STATUSES:
                status = "deleted" if row is None else row.get("status")
                why = ((row or {}).get("statusError") or {}).get("message") if row else None
                reclaimed = '; a spot instance may have been reclaimed: try allocation="on-demand"'
                raise ProvisionError(
                    f"Novita instance {instance.id} (node {instance.node}) ended before it could be used "
                    f"({status}{': ' + str(why) if why else ''}){reclaimed if instance.spot else ''}"
                )
            assert row is not None
            address = ssh_address(row) if row.get("status") == "running" else None
            if address is not None:
                host, port = address
                ready.append(attrs.evolve(instance, public_ip=host, private_ip=host, ssh_port=port))
        return ready

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        await asyncio.gather(*(self.api.delete(i.id) for i in instances))

    async def machine_gone(self, instance: Instance) -> bool:
        return gone(await self.api.instance(instance.id))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """Instances named for this pool that Novita still lists (a creation whose answer was lost)."""
        return [
            Instance(id=str(row["id"]), node=-1)
            for row in await self.api.instances()
            if row.get("id") and of_pool(row.get("name"), cluster.id) is not None and not gone(row)
        ]

    async def release(self, cluster: Cluster) -> None:
        await self.api.close()
