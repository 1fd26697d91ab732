"""`MassedComputeProvider`: a pool's machines, deployed, read back and terminated through Massed
Compute's VM API.

Only the API half is here (see `skyward.providers.cloud` and `rented`): `prepare_cloud` checks the
key, finds the products that fit the spec and the image to boot; `launch` deploys one machine per
node with its startup command (`machine`), trying the products with capacity cheapest first and
falling over to the next when Massed Compute has no room; `refresh` hands a machine over once it
runs and its sshd presents the pool's host key; `destroy` terminates machines and waits until
Massed Compute no longer lists them. The pool's login key goes with each deploy (`sshKey`), so
nothing is registered on the account and `release` only closes the session. A machine whose
client is gone is ended by its guardian alone (no tags, no lease on the cloud's side).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from skyward.errors import ConfigurationError
from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.handover import Address, handed_over, read_back
from skyward.providers.probe import HOST_KEY_GRACE, PinnedKeyWait
from skyward.providers.rented import RentedCloud, named_leftovers, rented_instance
from skyward.providers.ssh import head_port
from skyward_massedcompute.account import ACCOUNT
from skyward_massedcompute.api import FAILED_STATUSES, LOGGER, MassedAPI, gone
from skyward_massedcompute.catalog import Product, matching, plan
from skyward_massedcompute.machine import end_command, instance_name, startup_command

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_massedcompute.config import MassedCompute

#: How long a running machine may answer with its image's host key before it is handed over (and
#: then refused by the pinned check): the startup command restarts sshd with ours within seconds.
GRACE = HOST_KEY_GRACE


def _ended(row: dict[str, Any] | None) -> str | None:
    """Why a machine will not come up (terminated, failed), or None while it may."""
    if row is None:
        return "terminated"
    status = str(row.get("status") or "").lower()
    return status if status in FAILED_STATUSES else None


class MassedComputeProvider(RentedCloud):
    name = "massedcompute"
    cloud = "Massed Compute"
    console = "the Massed Compute console"
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None
    #: Everything a later call needs is in `cluster.state` (products, image): nothing to restore.
    lingers = True

    def __init__(self, config: MassedCompute, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        self.api_key = ACCOUNT.resolve(config.api_key)
        self.api = MassedAPI(self.api_key, config.url)
        self._log = structlog.get_logger(LOGGER)
        self._host_keys = PinnedKeyWait(GRACE)

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.url, instance_name(cluster.id, instance.node))

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the key, find the fitting products and the image; rent nothing."""
        try:
            inventory = await self.api.inventory()
            products = matching(spec, [Product.from_api(name, row) for name, row in inventory.items()])
            image_id = await self._image_id()
        except BaseException:
            await self.api.close()  # teardown may never come for a pool that failed this early
            raise
        self._log.info(
            "skyward.massedcompute_plan", pool=pool_id, products=[p.name for p in products], image=image_id
        )
        return Cluster(
            id=pool_id,
            provider=self.name,
            spec=spec,
            head_port=head_port(pool_id),
            state={"products": tuple(p.name for p in products), "image_id": image_id},
        )

    async def _image_id(self) -> int:
        """`MassedCompute(image=)`: an id as given, else the first image whose name contains it."""
        image = self.config.image
        if isinstance(image, int):
            return image
        rows = await self.api.images()
        for row in rows:
            if image.lower() in str(row.get("name") or "").lower() and row.get("id") is not None:
                return int(row["id"])
        names = ", ".join(f"{r.get('name')} ({r.get('id')})" for r in rows) or "none"
        raise ConfigurationError(f"MassedCompute(image={image!r}): no image is named so; images: {names}")

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The fitting products with capacity now (the inventory is read again: it moves)."""
        wanted = set(cluster.state["products"])
        inventory = await self.api.inventory()
        products = [Product.from_api(name, row) for name, row in inventory.items()]
        return plan(cluster.spec, [p for p in products if p.name in wanted], self._regions(cluster.spec))

    def _regions(self, spec: Spec) -> tuple[str, ...]:
        return self.config.regions or ((spec.region,) if spec.region else ())

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no fitting product has capacity"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        uuid = await self.api.launch(self._request(cluster, node, offer))
        return rented_instance(
            uuid, node, offer, ssh_user=self.config.ssh_user, ssh_port=self.config.ssh_port
        )

    def _request(self, cluster: Cluster, node: int, offer: Rental) -> dict[str, Any]:
        """The deploy body: the product, the region, the image, the name, the startup command."""
        assert self.access is not None
        name = instance_name(cluster.id, node)
        guardian = self.boot_guardian(cluster, node, end_command(self.config.url, name))
        return {
            "productName": offer.ref.name,
            "regionName": offer.offer.region,
            "imageId": cluster.state["image_id"],
            "instanceName": name,
            "command": startup_command(self.access, self.api_key, guardian),
            "sshKey": [self.access.login_key],
        }

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        """The machines booted whose sshd presents the pool's host key (`handover`)."""
        return await handed_over(
            instances,
            await read_back(instances, self.api.instance),
            keys=self._host_keys,
            expected=self.expected_host_key,
            ended=_ended,
            address=self._address,
            what="Massed Compute instance",
        )

    def _address(self, row: dict[str, Any]) -> Address | None:
        ip = row.get("ip")
        return Address(host=str(ip), port=self.config.ssh_port) if ip and row.get("os_booted") else None

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        await self.api.terminate([i.id for i in instances])
        for instance in instances:
            self._host_keys.forget(instance.id)

    async def machine_gone(self, instance: Instance) -> bool:
        return gone(await self.api.instance(instance.id))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """Machines named for this pool that Massed Compute still lists (a deploy whose answer was lost)."""
        return named_leftovers(await self.api.instances(), cluster.id, id_field="uuid", name_field="name")

    async def release(self, cluster: Cluster) -> None:
        await self.api.close()
