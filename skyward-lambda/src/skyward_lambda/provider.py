"""`LambdaProvider`: a pool's VMs, launched, read back and terminated through Lambda's Cloud API.

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` checks the key, finds
the instance types that fit the spec and registers the pool's login key (`skyward-<pool>`);
`launch` starts one VM per node with its own user data (`machine`), trying (type, region) offers
cheapest first and falling over to the next when Lambda has no capacity there, raising
`CapacityError` for the base to retry when none has; `refresh` hands a VM over once it is active
and its sshd answers (cloud-init installed the pool's host key before sshd started, and the base
pins it); `destroy` terminates VMs and waits until Lambda no longer lists them; `release` deletes the
login key. No expiry lease is renewed: a VM's name is its pool identity, and a VM whose client is
gone is terminated by the node's guardian alone.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import ProvisionError
from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.naming import of_pool
from skyward.providers.probe import answers_with
from skyward.providers.rented import RentedCloud
from skyward.providers.rest import Refused
from skyward.providers.ssh import head_port
from skyward_lambda.account import ACCOUNT, GUARDIAN_KEY_VARIABLE, resolve_guardian_key
from skyward_lambda.api import LOGGER, LambdaAPI, gone
from skyward_lambda.catalog import InstanceType, plan
from skyward_lambda.machine import NAME_PREFIX, end_command, instance_name, user_data
from skyward_lambda.pricing import fitting, regions_for

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_lambda.config import LambdaCloud


class LambdaProvider(RentedCloud):
    name = "lambda"
    cloud = "Lambda Cloud"
    console = "the Lambda Cloud console"
    #: Never used: every guarded node terminates itself through the API (`end_machine_command`).
    shutdown_command = None
    #: A parked pool's login key is in `cluster.state`; nothing else is kept on the provider.
    lingers = True

    def __init__(self, config: LambdaCloud, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        api_key = ACCOUNT.resolve(config.api_key)
        self.guardian_key = resolve_guardian_key(config.guardian_api_key, api_key)
        self.own_guardian_key = self.guardian_key != api_key
        self.api = LambdaAPI(api_key, config.url)
        self._log = structlog.get_logger(LOGGER)

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.url, instance_name(cluster.id, instance.node), instance.id)

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the key, find the fitting types, register the login key; rent nothing."""
        assert self.access is not None
        key_name = f"{NAME_PREFIX}{pool_id}"
        try:
            types = await fitting(self.api, spec)
            await self._check_guardian_key()
            key_id = await self.api.add_ssh_key(key_name, self.access.login_key)
        except BaseException:
            await self.api.close()  # teardown may never come for a pool that failed this early
            raise
        self._log.info("skyward.lambda_plan", pool=pool_id, types=[t.name for t in types])
        return Cluster(
            id=pool_id,
            provider=self.name,
            spec=spec,
            head_port=head_port(pool_id),
            state={"ssh_key": key_id, "ssh_key_name": key_name},
        )

    async def _check_guardian_key(self) -> None:
        """A guardian's own key that Lambda refuses would leave every VM unable to end itself:
        it fails the pool now, with one listing (nothing is created with it)."""
        if not self.own_guardian_key:
            return
        api = LambdaAPI(self.guardian_key, self.config.url)
        try:
            await api.ssh_keys()
        except Refused as exc:
            raise ProvisionError(
                f"Lambda Cloud refused the guardian's key, so no VM could terminate itself: check "
                f"{GUARDIAN_KEY_VARIABLE} (or LambdaCloud(guardian_api_key=...)) ({exc})"
            ) from exc
        finally:
            await api.close()

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The (type, region) pairs with capacity now, cheapest first."""
        spec = cluster.spec
        return plan(spec, await fitting(self.api, spec), regions_for(self.config, spec))

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no region has the fitting types free"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        kind: InstanceType = offer.ref
        instance_id = await self.api.launch(self._request(cluster, node, offer))
        return Instance(
            id=instance_id,
            node=node,
            ssh_user=self.config.ssh_user,
            ssh_port=self.config.ssh_port,
            hourly_rate=offer.price,
            on_demand_rate=offer.on_demand_price,
            spot=False,
            instance_type=kind.name,
            vcpus=kind.vcpus,
            memory_gb=kind.memory_gb,
        )

    def _request(self, cluster: Cluster, node: int, offer: Rental) -> dict[str, Any]:
        """The `POST /instance-operations/launch` body (fields as Lambda's API documents them)."""
        assert self.access is not None
        name = instance_name(cluster.id, node)
        guardian = self.boot_guardian(cluster, node, end_command(self.config.url, name))
        body: dict[str, Any] = {
            "region_name": offer.offer.region,
            "instance_type_name": offer.ref.name,
            "ssh_key_names": [cluster.state["ssh_key_name"]],
            "name": name,
            "user_data": user_data(self.access, self.guardian_key, self.config.ssh_user, guardian),
        }
        if self.config.image_family:
            body["image"] = {"family": self.config.image_family}
        return body

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        rows = await asyncio.gather(*(self.api.instance(i.id) for i in instances))
        ready = []
        for instance, row in zip(instances, rows, strict=True):
            if gone(row):
                status = "terminated" if row is None else row.get("status")
                raise ProvisionError(
                    f"Lambda Cloud instance {instance.id} (node {instance.node}) ended before it could be "
                    f"used ({status})"
                )
            assert row is not None
            ip = row.get("ip")
            if row.get("status") != "active" or not ip:
                continue
            # Active is not yet listening: its sshd starts once cloud-init installed our host key.
            # Another key is handed over too, for the pinned login to refuse.
            if await answers_with(str(ip), self.config.ssh_port, self.expected_host_key(instance)) is None:
                continue
            private = str(row.get("private_ip") or ip)
            ready.append(attrs.evolve(instance, public_ip=str(ip), private_ip=private))
        return ready

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        await asyncio.gather(*(self.api.terminate(i.id) for i in instances))

    async def machine_gone(self, instance: Instance) -> bool:
        return gone(await self.api.instance(instance.id))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """VMs named for this pool that Lambda still lists (a launch whose answer was lost)."""
        return [
            Instance(id=str(row["id"]), node=-1)
            for row in await self.api.instances()
            if row.get("id") and of_pool(row.get("name"), cluster.id) is not None and not gone(row)
        ]

    async def release(self, cluster: Cluster) -> None:
        """Delete the pool's login key; the HTTP session is closed last."""
        try:
            if cluster.state.get("ssh_key"):
                await self.api.delete_ssh_key(cluster.state["ssh_key"])
                cluster.state["ssh_key"] = None
        finally:
            await self.api.close()
