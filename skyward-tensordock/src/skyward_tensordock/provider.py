"""`TensorDockProvider`: a pool's VMs, deployed on marketplace hostnodes, read back and deleted
through TensorDock's marketplace API.

Only the API half is here (see `skyward.providers.cloud` and `rented`): `prepare_cloud` finds the
GPU models that fit the spec; `launch` deploys one VM per node with its cloud-init script
(`machine`), trying the hostnodes with stock cheapest first and falling over to the next when one
has no room (its stock moved since the listing); `refresh` hands a VM over once it runs and the
address and port TensorDock forwards to its port 22 present the pool's host key; `destroy`
deletes VMs and waits until TensorDock no longer has them. Each deploy asks for one of the
hostnode's free external ports to be forwarded to 22 (two nodes on one hostnode ask for two); the
VM is reached at the address and port the deploy answers with. The login key goes with each
deploy, so nothing is registered on the account and `release` only closes the session.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import CapacityError, ProvisionError
from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.probe import HOST_KEY_GRACE, PinnedKeyWait
from skyward.providers.rented import RentedCloud, named_leftovers, rented_instance
from skyward.providers.ssh import head_port
from skyward_tensordock.account import resolve_credentials
from skyward_tensordock.api import FAILED_STATUSES, LOGGER, TensorDockAPI, ssh_port
from skyward_tensordock.catalog import Hostnode, Shape, matching_models, plan
from skyward_tensordock.machine import cloud_init, end_command, instance_name, startup_script

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_tensordock.config import TensorDock

#: How long a running VM may answer with its image's host key before it is handed over (and then
#: refused by the pinned check): the startup script restarts sshd with ours within seconds.
GRACE = HOST_KEY_GRACE


class TensorDockProvider(RentedCloud):
    name = "tensordock"
    cloud = "TensorDock"
    console = "the TensorDock dashboard"
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None
    #: Everything a later call needs is in `cluster.state` (the models): nothing to restore.
    lingers = True

    def __init__(self, config: TensorDock, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        self.credentials = resolve_credentials(config.api_key, config.api_token)
        self.api = TensorDockAPI(self.credentials, config.url)
        self._log = structlog.get_logger(LOGGER)
        self._host_keys = PinnedKeyWait(GRACE)
        #: (hostnode, external port) this pool asked for: two deploys never ask for the same.
        self._claimed: set[tuple[str, int]] = set()

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.url, instance_name(cluster.id, instance.node))

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Find the GPU models that fit (no stock needed yet); rent nothing."""
        try:
            models = matching_models(spec, await self._hostnodes(), self.config.storage_gb)
        except BaseException:
            await self.api.close()  # teardown may never come for a pool that failed this early
            raise
        self._log.info("skyward.tensordock_plan", pool=pool_id, models=list(models))
        return Cluster(
            id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id), state={"models": models}
        )

    async def _hostnodes(self) -> list[Hostnode]:
        return [Hostnode.from_api(uuid, row) for uuid, row in (await self.api.hostnodes()).items()]

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The fitting shapes on hostnodes with stock now (the listing is read again: it moves)."""
        spec = cluster.spec
        regions = self.config.regions or ((spec.region,) if spec.region else ())
        return plan(
            spec,
            await self._hostnodes(),
            models=cluster.state["models"],
            storage_gb=self.config.storage_gb,
            regions=regions,
        )

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no hostnode has the GPUs free"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        shape: Shape = offer.ref
        port = self._claim(shape.hostnode)
        try:
            answer = await self.api.deploy(self._form(cluster, node, shape, port))
        except ProvisionError as exc:
            # A refused port may be someone else's now: only a port the deploy never reached the
            # marketplace's books with is free to ask for again.
            if not isinstance(exc, CapacityError):
                self._claimed.discard((shape.hostnode.id, port))
            raise
        instance = rented_instance(
            str(answer["server"]),
            node,
            offer,
            ssh_user=self.config.ssh_user,
            ssh_port=ssh_port(answer) or port,
        )
        address = str(answer.get("ip") or "")
        return attrs.evolve(instance, public_ip=address, private_ip=address)

    def _claim(self, hostnode: Hostnode) -> int:
        free = [p for p in sorted(hostnode.ports, reverse=True) if (hostnode.id, p) not in self._claimed]
        if not free:
            raise CapacityError(
                f"TensorDock hostnode {hostnode.id} has no external port free to forward to SSH"
            )
        self._claimed.add((hostnode.id, free[0]))
        return free[0]

    def _form(self, cluster: Cluster, node: int, shape: Shape, port: int) -> dict[str, Any]:
        """The deploy form: the hostnode, the shape, the image, the name, SSH's port, cloud-init."""
        assert self.access is not None
        name = instance_name(cluster.id, node)
        guardian = self.boot_guardian(cluster, node, end_command(self.config.url, name))
        return {
            "hostnode": shape.hostnode.id,
            "gpu_model": shape.model,
            "gpu_count": shape.gpus,
            "vcpus": shape.vcpus,
            "ram": shape.ram_gb,
            "storage": shape.storage_gb,
            "operating_system": self.config.operating_system,
            "name": name,
            # Required by the API; never used (logins are by key) nor kept.
            "password": secrets.token_urlsafe(24),
            "ssh_key": self.access.login_key,
            "external_ports": f"{{{port}}}",
            "internal_ports": "{22}",
            "cloudinit_script": cloud_init(startup_script(self.access, self.credentials, guardian)),
        }

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        rows = await asyncio.gather(*(self.api.vm(i.id) for i in instances))
        ready = []
        for instance, row in zip(instances, rows, strict=True):
            status = str((row or {}).get("status") or "").lower()
            if row is None or status in FAILED_STATUSES:
                where = f"TensorDock VM {instance.id} (node {instance.node})"
                raise ProvisionError(f"{where} ended before it could be used ({status or 'deleted'})")
            if status != "running":
                continue
            address = str(row.get("ip_address") or instance.public_ip)
            port = ssh_port(row) or instance.ssh_port
            if not await self._host_keys.ready(instance.id, address, port, self.expected_host_key(instance)):
                continue
            ready.append(attrs.evolve(instance, public_ip=address, private_ip=address, ssh_port=port))
        return ready

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        for instance in instances:
            await self.api.delete(instance.id)
            self._host_keys.forget(instance.id)

    async def machine_gone(self, instance: Instance) -> bool:
        return await self.api.vm(instance.id) is None

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """VMs named for this pool that TensorDock still has (a deploy whose answer was lost)."""
        return named_leftovers(await self.api.vms(), cluster.id, id_field="id", name_field="name")

    async def release(self, cluster: Cluster) -> None:
        await self.api.close()
