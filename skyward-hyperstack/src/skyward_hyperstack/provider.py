"""`HyperstackProvider`: a pool's VMs, created, read back and deleted through Hyperstack's API.

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` checks the key and
finds the flavors that fit the spec; `launch` creates one VM per node with its own user data
(`machine`), trying the offers (flavor in a region, cheapest first) and falling over to the next
one when Hyperstack has no capacity, the region's environment and the pool's keypair made there
first (once); `refresh` hands a VM over once it is ACTIVE with a floating IP and its sshd
presents the pool's host key; `destroy` deletes VMs and waits until Hyperstack no longer lists
them; `release` deletes the pool's keypairs. A VM's name is its pool identity, so a VM whose
client is gone is ended by the node's guardian through the API (see `machine`).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import attrs
import structlog

from skyward.errors import ProvisionError
from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.probe import answers_with
from skyward.providers.rented import RentedCloud, named_leftovers, rented_instance
from skyward.providers.ssh import head_port
from skyward_hyperstack.account import ACCOUNT
from skyward_hyperstack.api import LOGGER, HyperstackAPI, gone
from skyward_hyperstack.catalog import Flavor
from skyward_hyperstack.machine import LABEL, end_command, user_data, vm_name
from skyward_hyperstack.pricing import offers, regions_for

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_hyperstack.config import Hyperstack

#: How long an ACTIVE VM may answer with another host key before it is handed over (and then
#: refused by the pinned check): cloud-init installs ours before sshd first starts.
HOST_KEY_GRACE = 300.0


class HyperstackProvider(RentedCloud):
    name = "hyperstack"
    cloud = "Hyperstack"
    console = "the Hyperstack console (Virtual Machines)"
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None
    #: A parked pool's keypairs are in `cluster.state`; its VMs' user data needs nothing renewed.
    lingers = True

    def __init__(self, config: Hyperstack, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        self.api_key = ACCOUNT.resolve(config.api_key)
        self.api = HyperstackAPI(self.api_key, config.url)
        self._log = structlog.get_logger(LOGGER)
        self._foreign_key_since: dict[str, float] = {}
        self._placing = asyncio.Lock()

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.url, vm_name(cluster.id, instance.node))

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the key and find the fitting flavors; rent nothing."""
        try:
            found = await offers(self.api, spec, regions_for(self.config, spec))
        except BaseException:
            await self.api.close()  # teardown may never come for a pool that failed this early
            raise
        self._log.info("skyward.hyperstack_plan", pool=pool_id, offers=[str(o) for o in found[:8]])
        return Cluster(
            id=pool_id,
            provider=self.name,
            spec=spec,
            head_port=head_port(pool_id),
            state={"keypairs": {}},
        )

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The fitting flavors in stock now, cheapest first."""
        return await offers(self.api, cluster.spec, regions_for(self.config, cluster.spec))

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no region has a fitting flavor in stock"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        assert self.access is not None
        flavor: Flavor = offer.ref
        environment = await self._placed(cluster, flavor.region)
        name = vm_name(cluster.id, node)
        guardian = self.boot_guardian(cluster, node, end_command(self.config.url, name))
        port = self.config.ssh_port
        vm_id = await self.api.create_vm(
            {
                "name": name,
                "environment_name": environment,
                "image_name": self.config.image,
                "flavor_name": flavor.name,
                "key_name": _keypair_name(cluster.id),
                "count": 1,
                "assign_floating_ip": True,
                "create_bootable_volume": False,
                "user_data": user_data(self.access, self.api_key, self.config.ssh_user, guardian),
                "labels": [LABEL, f"{LABEL}-pool-{cluster.id}"],
                "security_rules": [
                    {
                        "direction": "ingress",
                        "ethertype": "IPv4",
                        "protocol": "tcp",
                        "remote_ip_prefix": self.config.ssh_from,
                        "port_range_min": port,
                        "port_range_max": port,
                    }
                ],
            }
        )
        return rented_instance(vm_id, node, offer, ssh_user=self.config.ssh_user, ssh_port=port)

    async def _placed(self, cluster: Cluster, region: str) -> str:
        """The region's environment (made when missing) with the pool's keypair in it (once)."""
        assert self.access is not None
        environment = self.config.environment_in(region)
        keypairs: dict[str, str] = cluster.state.setdefault("keypairs", {})
        async with self._placing:
            if region in keypairs:
                return environment
            known = {row.get("name"): row for row in await self.api.environments()}
            if environment not in known:
                await self.api.create_environment(environment, region)
            elif str(known[environment].get("region") or region).upper() != region:
                raise ProvisionError(
                    f"Hyperstack environment {environment!r} is in {known[environment].get('region')}, "
                    f"not {region}: pass Hyperstack(environment=None) or one in {region}"
                )
            keypairs[region] = await self.api.import_keypair(
                _keypair_name(cluster.id), environment, self.access.login_key
            )
        return environment

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        rows = await asyncio.gather(*(self.api.vm(i.id) for i in instances))
        ready = []
        for instance, row in zip(instances, rows, strict=True):
            status = str((row or {}).get("status") or "").upper()
            if gone(row) or status == "ERROR":
                raise ProvisionError(
                    f"Hyperstack VM {instance.id} (node {instance.node}) ended before it could be used "
                    f"({'deleted' if row is None else status})"
                )
            ip = (row or {}).get("floating_ip")
            if status != "ACTIVE" or not ip:
                continue
            port = self.config.ssh_port
            answer = await answers_with(str(ip), port, self.expected_host_key(instance))
            if answer is None or (answer is False and not self._grace_over(instance)):
                continue
            fixed = (row or {}).get("fixed_ip") or ip
            ready.append(attrs.evolve(instance, public_ip=str(ip), private_ip=str(fixed), ssh_port=port))
        return ready

    def _grace_over(self, instance: Instance) -> bool:
        first = self._foreign_key_since.setdefault(instance.id, time.monotonic())
        return time.monotonic() - first >= HOST_KEY_GRACE

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        await asyncio.gather(*(self.api.delete_vm(i.id) for i in instances))
        for instance in instances:
            self._foreign_key_since.pop(instance.id, None)

    async def machine_gone(self, instance: Instance) -> bool:
        return gone(await self.api.vm(instance.id))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """VMs named for this pool that Hyperstack still lists (a create whose answer was lost)."""
        rows = await self.api.vms(search=vm_name(cluster.id, 0)[:-1])
        return named_leftovers(rows, cluster.id, id_field="id", name_field="name", gone=gone)

    async def release(self, cluster: Cluster) -> None:
        """Delete the pool's keypairs (the environments stay: they cost nothing and hold nothing of
        the pool's); the HTTP session is closed last."""
        try:
            keypairs: dict[str, str] = cluster.state.get("keypairs", {})
            for region, keypair_id in list(keypairs.items()):
                await self.api.delete_keypair(keypair_id)
                del keypairs[region]
        finally:
            await self.api.close()


def _keypair_name(pool_id: str) -> str:
    return f"skyward-{pool_id}"
