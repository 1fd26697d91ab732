"""`VultrProvider`: a pool's instances, created, read back and deleted through Vultr's API v2.

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` checks the key, finds
the plans that fit the spec, registers the pool's login key and makes its firewall group (SSH open
to this client's address alone); `launch` creates one instance per node with its own user data
(`machine`), trying the offers (plan, region) cheapest first and falling over to the next one when
Vultr has no capacity, raising `CapacityError` for the base to retry when none has; `refresh`
hands an instance over once it runs and its sshd presents the pool's host key; `destroy` deletes
instances and waits until Vultr no longer lists them; `release` removes the firewall group and the
key. Every instance is tagged `skyward` and labelled `skyward-<pool>-<node>` (`sky ls`/`sky down`
find it so); an instance whose client is gone is ended by the node's guardian.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from typing import TYPE_CHECKING, Any

import structlog

from skyward.errors import ProvisionError
from skyward.market.rental import Rental
from skyward.providers.address import client_cidr
from skyward.providers.base import Cluster, Instance
from skyward.providers.handover import Address, handed_over, read_back
from skyward.providers.probe import HOST_KEY_GRACE, PinnedKeyWait
from skyward.providers.rented import RentedCloud, named_leftovers, rented_instance
from skyward.providers.rest import delete_retrying
from skyward.providers.ssh import head_port
from skyward_vultr.account import ACCOUNT
from skyward_vultr.api import LOGGER, TAG, VultrAPI
from skyward_vultr.machine import encoded, end_command, label, user_data
from skyward_vultr.pricing import offers, plans_for, regions_for

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_vultr.config import Vultr

#: How long a running instance may answer with its image's host key before it is handed over (and
#: then refused by the pinned check): the user data restarts sshd with ours within seconds.
GRACE = HOST_KEY_GRACE


def _ended(row: dict[str, Any] | None) -> str | None:
    """Why an instance will not come up (deleted, suspended), or None while it may."""
    if row is None:
        return "deleted"
    return "suspended" if row.get("status") == "suspended" else None


class VultrProvider(RentedCloud):
    name = "vultr"
    cloud = "Vultr"
    console = "the Vultr console (Products -> Compute)"
    #: Never used: every guarded node ends itself through the API (`end_machine_command`).
    shutdown_command = None
    #: A parked pool's key and firewall group are in `cluster.state`; each node's user data is
    #: built when it is created, so an adopting pool needs nothing restored.
    lingers = True

    def __init__(self, config: Vultr, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        self.api_key = ACCOUNT.resolve(config.api_key)
        self.api = VultrAPI(self.api_key, config.url)
        self._log = structlog.get_logger(LOGGER)
        self._host_keys = PinnedKeyWait(GRACE)

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.url, label(cluster.id, instance.node), TAG)

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the key and the plans, register the login key, make the firewall group; rent nothing."""
        assert self.access is not None
        made: dict[str, str] = {}
        try:
            plans = await plans_for(self.api, spec)
            cidr = self.config.ssh_cidr or await asyncio.to_thread(self._client_cidr)
            made["ssh_key"] = await self.api.add_ssh_key(f"skyward-{pool_id}", self.access.login_key)
            made["firewall"] = await self.api.add_firewall(f"skyward-{pool_id}")
            network = ipaddress.ip_network(cidr, strict=False)
            await self.api.allow(
                made["firewall"],
                str(network.network_address),
                network.prefixlen,
                network.version,
                self.config.ssh_port,
            )
        except BaseException:
            await asyncio.shield(self._remove(made))  # no cluster, so no teardown would
            raise
        self._log.info("skyward.vultr_plan", pool=pool_id, plans=[p.name for p in plans], ssh_from=cidr)
        return Cluster(
            id=pool_id,
            provider=self.name,
            spec=spec,
            head_port=head_port(pool_id),
            state={"ssh_key": made["ssh_key"], "firewall": made["firewall"]},
        )

    def _client_cidr(self) -> str:
        try:
            return client_cidr(self.config.ip_lookup_url)
        except ProvisionError as exc:
            raise ProvisionError(
                f"{exc}; Vultr opens SSH only to this client: pass Vultr(ssh_cidr=...) with the "
                "address range the client connects from"
            ) from None

    async def _remove(self, made: dict[str, str]) -> None:
        """Delete what a failed start made, then close the session (no teardown will come)."""
        try:
            if made.get("firewall"):
                with contextlib.suppress(ProvisionError):
                    await self.api.delete_firewall(made["firewall"])
            if made.get("ssh_key"):
                with contextlib.suppress(ProvisionError):
                    await self.api.delete_ssh_key(made["ssh_key"])
        finally:
            await self.api.close()

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        """The plans and regions Vultr can deploy now, cheapest first."""
        return await offers(self.api, cluster.spec, regions_for(self.config, cluster.spec))

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no region can deploy the fitting plans now"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        row = await self.api.create_instance(self._request(cluster, node, offer))
        config = self.config
        return rented_instance(
            str(row["id"]), node, offer, ssh_user=config.ssh_user, ssh_port=config.ssh_port
        )

    def _request(self, cluster: Cluster, node: int, offer: Rental) -> dict[str, Any]:
        """The `POST /instances` body: the plan in its region, the image, the pool's key and
        firewall group, the tag, and the node's user data (keys, credentials, guardian)."""
        assert self.access is not None
        name = label(cluster.id, node)
        guardian = self.boot_guardian(cluster, node, end_command(self.config.url, name, TAG))
        image = {"image_id": self.config.image_id} if self.config.image_id else {"os_id": self.config.os_id}
        return {
            "region": offer.offer.region,
            "plan": offer.ref.name,
            **image,
            "label": name,
            "hostname": name,
            "tags": [TAG],
            "sshkey_id": [cluster.state["ssh_key"]],
            "firewall_group_id": cluster.state["firewall"],
            "user_data": encoded(user_data(self.access, self.api_key, guardian)),
            # The firewall guards the public address only: the pool's nodes meet on the VPC.
            "enable_vpc": True,
            "backups": "disabled",
            "activation_email": False,
        }

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        """The instances running whose sshd presents the pool's host key (`handover`)."""
        return await handed_over(
            instances,
            await read_back(instances, self.api.instance),
            keys=self._host_keys,
            expected=self.expected_host_key,
            ended=_ended,
            address=self._address,
            what="Vultr instance",
        )

    def _address(self, row: dict[str, Any]) -> Address | None:
        ip = str(row.get("main_ip") or "")
        if row.get("status") != "active" or row.get("power_status") != "running" or ip in ("", "0.0.0.0"):
            return None
        return Address(host=ip, port=self.config.ssh_port, private=str(row.get("internal_ip") or ""))

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        await asyncio.gather(*(self.api.delete_instance(i.id) for i in instances))
        for instance in instances:
            self._host_keys.forget(instance.id)

    async def machine_gone(self, instance: Instance) -> bool:
        return await self.api.instance(instance.id) is None

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """Instances tagged and labelled for this pool that Vultr still lists (a creation whose
        answer was lost)."""
        rows = await self.api.instances(tag=TAG)
        return named_leftovers(rows, cluster.id, id_field="id", name_field="label")

    async def release(self, cluster: Cluster) -> None:
        """Delete the pool's firewall group (retried: Vultr may still be detaching it from the
        instances just deleted) and its login key; the HTTP session is closed last."""
        try:
            if cluster.state.get("firewall"):
                group = cluster.state["firewall"]
                await delete_retrying(
                    lambda: self.api.delete_firewall(group),
                    cloud=self.cloud,
                    what=f"firewall group {group}",
                    where=self.console,
                    delay=self.poll_interval,
                )
            if cluster.state.get("ssh_key"):
                await self.api.delete_ssh_key(cluster.state["ssh_key"])
        finally:
            await self.api.close()
