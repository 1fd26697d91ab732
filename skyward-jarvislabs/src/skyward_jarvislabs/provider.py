"""`JarvisLabsProvider`: a pool's instances, created, read back and destroyed through JarvisLabs' API.

Only the API half is here (see `skyward.providers.cloud` and `rented`): `prepare_cloud` checks the
key and finds the GPU types that fit the spec; `launch` uploads each node's startup script
(`machine`) and creates one instance per node with it, trying the regions with GPUs free
cheapest first (spot first where the allocation prefers it) and falling over to the next when
JarvisLabs has none; `refresh` hands an instance over once it runs and its sshd presents the
pool's host key, at the address its listing's `ssh_str` gives, and deletes its script; `destroy`
destroys instances (never pauses: a paused instance bills its disk) and waits until JarvisLabs
no longer lists them. A pool's exit destroys; a pool's scripts left by a failed start go at
`release`. A machine whose client is gone is ended by its guardian alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.handover import Address, handed_over, read_back
from skyward.providers.naming import of_pool
from skyward.providers.probe import HOST_KEY_GRACE, PinnedKeyWait
from skyward.providers.rented import RentedCloud, named_leftovers, rented_instance
from skyward.providers.ssh import head_port
from skyward_jarvislabs.account import API_URL, resolve_api_key
from skyward_jarvislabs.api import FAILED_STATUSES, LOGGER, JarvisAPI, gone
from skyward_jarvislabs.catalog import GpuType, matching, plan
from skyward_jarvislabs.machine import end_command, instance_name, ssh_address, startup_script

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_jarvislabs.config import JarvisLabs

#: How long a running instance may answer with its image's host key before it is handed over (and
#: then refused by the pinned check): the startup script restarts sshd with ours within seconds.
GRACE = HOST_KEY_GRACE


def _ended(row: dict[str, Any] | None) -> str | None:
    """Why an instance will not come up (destroyed, failed), or None while it may."""
    status = str((row or {}).get("status") or "").lower()
    if gone(row) or status in FAILED_STATUSES:
        return status or "destroyed"
    return None


class JarvisLabsProvider(RentedCloud):
    name = "jarvislabs"
    cloud = "JarvisLabs"
    console = "the JarvisLabs dashboard"
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None
    #: Everything a later call needs is in `cluster.state`: nothing to restore.
    lingers = True

    def __init__(self, config: JarvisLabs, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        self.api_key = resolve_api_key(config.api_key)
        self.api = JarvisAPI(self.api_key, config.api_url)
        self._log = structlog.get_logger(LOGGER)
        self._host_keys = PinnedKeyWait(GRACE)
        #: Each instance's startup script, deleted once the instance is handed over.
        self._scripts: dict[str, str] = {}

    def _end(self, cluster: Cluster, node: int, region: str) -> str:
        listing = self.config.api_url or API_URL
        return end_command(listing, self.api.at(region), instance_name(cluster.id, node))

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        region = str(cluster.state.get("regions", {}).get(instance.id, ""))
        return self._end(cluster, instance.node, region)

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the key and the names, find the fitting GPU types; rent nothing."""
        try:
            instance_name(pool_id, max(spec.nodes.max or spec.nodes.desired, 1) - 1)
            gpus = matching(
                spec, [GpuType.from_api(r) for r in await self.api.server_meta()], self.config.template
            )
        except BaseException:
            await self.api.close()  # teardown may never come for a pool that failed this early
            raise
        types = tuple(sorted({g.name for g in gpus}))
        self._log.info("skyward.jarvislabs_plan", pool=pool_id, gpu_types=types)
        return Cluster(
            id=pool_id,
            provider=self.name,
            spec=spec,
            head_port=head_port(pool_id),
            state={"gpu_types": types, "regions": {}},
        )

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The fitting GPU types with GPUs free now (the listing is read again: it moves)."""
        wanted = set(cluster.state["gpu_types"])
        gpus = [g for g in (GpuType.from_api(r) for r in await self.api.server_meta()) if g.name in wanted]
        regions = self.config.regions or ((cluster.spec.region,) if cluster.spec.region else ())
        return plan(cluster.spec, gpus, template=self.config.template, regions=regions)

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no fitting GPU type has GPUs free"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        assert self.access is not None
        name = instance_name(cluster.id, node)
        region = offer.ref.region
        guardian = self.boot_guardian(cluster, node, self._end(cluster, node, region))
        script_id = await self.api.add_script(name, startup_script(self.access, self.api_key, guardian))
        try:
            machine_id = await self.api.launch(
                self.config.template, self._request(cluster, node, offer, script_id)
            )
        except BaseException:
            await self.api.delete_script(script_id)
            raise
        self._scripts[machine_id] = script_id
        cluster.state["regions"][machine_id] = region
        return rented_instance(machine_id, node, offer, ssh_user=self.config.ssh_user or "root", ssh_port=22)

    def _request(self, cluster: Cluster, node: int, offer: Rental, script_id: str) -> dict[str, Any]:
        """The create body, as JarvisLabs' SDK sends it (`api`)."""
        return {
            "gpu_type": offer.ref.name,
            "num_gpus": offer.offer.accelerator_count,
            "hdd": self.config.storage,
            "region": offer.ref.region,
            "name": instance_name(cluster.id, node),
            "is_spot": offer.spot,
            "duration": "hour",
            "disk_type": "ssd",
            "http_ports": "",
            "script_id": script_id,
            "script_args": "",
            "fs_id": None,
            "arguments": "",
        }

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        """The instances running whose sshd presents the pool's host key (`handover`); each one's
        startup script (it holds the key) is deleted as it is handed over."""
        rows = await read_back(instances, self.api.instance)
        ready = await handed_over(
            instances,
            rows,
            keys=self._host_keys,
            expected=self.expected_host_key,
            ended=_ended,
            address=self._address,
            what="JarvisLabs instance",
        )
        for instance in ready:
            await self._drop_script(instance.id)
        return ready

    def _address(self, row: dict[str, Any]) -> Address | None:
        """Where a running instance answers, from its listing's SSH command."""
        found = ssh_address(row.get("ssh_str")) if str(row.get("status") or "").lower() == "running" else None
        if found is None:
            return None
        host, port, user = found
        return Address(host=host, port=port, user=self.config.ssh_user or user)

    async def _drop_script(self, machine_id: str) -> None:
        script_id = self._scripts.pop(machine_id, None)
        if script_id is not None:
            await self.api.delete_script(script_id)

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        for instance in instances:
            row = await self.api.instance(instance.id)
            if not gone(row):
                assert row is not None
                await self.api.destroy(
                    instance.id, str(row.get("region") or ""), str(row.get("template") or "")
                )
            self._host_keys.forget(instance.id)

    async def machine_gone(self, instance: Instance) -> bool:
        return gone(await self.api.instance(instance.id))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """Instances named for this pool that JarvisLabs still lists (a create whose answer was lost)."""
        rows = await self.api.instances()
        return named_leftovers(rows, cluster.id, id_field="machine_id", name_field="name", gone=gone)

    async def release(self, cluster: Cluster) -> None:
        """Delete the pool's startup scripts still on the account (they hold its key), then close."""
        try:
            for script_id, name in await self.api.scripts():
                if of_pool(name, cluster.id.lower()) is not None:
                    await self.api.delete_script(script_id)
            self._scripts.clear()
        finally:
            await self.api.close()
