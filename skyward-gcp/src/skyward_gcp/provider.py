"""`GCPProvider`: a pool's Compute Engine VMs, created, read back and deleted through Google's client.

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` resolves Application
Default Credentials (`account`), reads which machine and accelerator types the pool's zones list,
and creates the pool's firewall rule (SSH from this client's address only, to the pool's tagged
VMs only); `launch` creates one VM per node (`machine.instance_body`), trying the offers (shape,
zone, spot or not) in order and falling over to the next when a zone has no room
(`ZONE_RESOURCE_POOL_EXHAUSTED`); `refresh` hands a VM over once it runs and its sshd presents
the pool's host key; `destroy` deletes VMs and waits until Compute Engine no longer has them;
`release` deletes the firewall rule. A spot node watches its metadata for a preemption notice
(`preemption`). An instance's id is `<zone>/<name>`: a name is unique only within its zone.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import ConfigurationError, NoOffersError, ProvisionError
from skyward.market.rental import Rental
from skyward.providers.address import ANYWHERE, client_cidr
from skyward.providers.base import Cluster, Instance, NodeSetup
from skyward.providers.rented import RentedCloud
from skyward.providers.ssh import head_port
from skyward_gcp.account import require_credentials, resolve_account
from skyward_gcp.api import LOGGER, ComputeApi
from skyward_gcp.machine import (
    POOL_LABEL,
    end_command,
    firewall_body,
    firewall_name,
    instance_body,
    instance_name,
    pool_of,
    startup_script,
)
from skyward_gcp.planning import matching, plan
from skyward_gcp.preemption import POLL_INTERVAL, spot_notices

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward.transport.ssh import SSHChannel
    from skyward_gcp.config import GCP

#: How long a running VM may answer with its image's host key before it is handed over (and then
#: refused by the pinned check): the startup script restarts sshd with ours within seconds of boot.
HOST_KEY_GRACE = 300.0
#: Instance statuses after which a VM will not come up by itself.
ENDED = ("STOPPING", "STOPPED", "SUSPENDING", "SUSPENDED", "TERMINATED")


def split_id(instance_id: str) -> tuple[str, str]:
    """(zone, name) of an instance id, `<zone>/<name>/<numeric id>`."""
    zone, name, _ = (instance_id.split("/") + ["", ""])[:3]
    return zone, name


def numeric_id(instance_id: str) -> str:
    return (instance_id.split("/") + ["", ""])[2]


def instance_id(zone: str, name: str, number: object) -> str:
    """A VM's id for the pool: its name is unique only in its zone, and a replacement (a
    preempted spot VM's) takes the same name, so Compute Engine's numeric id is part of it."""
    return f"{zone}/{name}/{number}"


def address_of(row: Any) -> tuple[str, str]:
    """(external, internal) address of a VM; "" where it has none yet."""
    interfaces = list(row.network_interfaces)
    if not interfaces:
        return "", ""
    configs = list(interfaces[0].access_configs)
    return (configs[0].nat_i_p if configs else ""), interfaces[0].network_i_p


class GCPProvider(RentedCloud):
    name = "gcp"
    cloud = "GCP"
    console = "the Google Cloud console (Compute Engine > VM instances)"
    #: Never used: every guarded node deletes itself through the API (`end_machine_command`).
    shutdown_command = None
    #: A parked pool's firewall rule and zones are in `cluster.state`; `resume_cloud` reconnects.
    lingers = True

    def __init__(self, config: GCP, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        require_credentials()  # when a pool starts: none there fails now, naming where they go
        self.config = config
        self.api: ComputeApi | None = None
        self._log = structlog.get_logger(LOGGER)
        self._foreign_key_since: dict[str, float] = {}
        self.spot = spot_notices(min(POLL_INTERVAL, self.options.reconcile_tick_interval))

    @property
    def compute(self) -> ComputeApi:
        if self.api is None:
            raise ProvisionError("gcp: the provider was used before prepare()")
        return self.api

    async def _connect(self) -> ComputeApi:
        """The API client, on credentials resolved now (a missing one fails here, naming where)."""
        if self.api is None:
            account = await asyncio.to_thread(resolve_account, self.config.project)
            self.api = ComputeApi(account, self.config.api_endpoint)
        return self.api

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        return end_command(self.config.api_root)

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Credentials, the zones' listings and the firewall rule; nothing billable."""
        shapes = matching(spec)
        if not (self.config.zone or self.config.region or spec.region):
            raise ConfigurationError(
                'GCP needs a place: GCP(zone="us-central1-a"), GCP(region="us-central1") or a spec region'
            )
        api = await self._connect()
        try:
            zones = await self._listings(api, spec)
            if not plan(spec, shapes, zones):
                raise NoOffersError(
                    f"GCP lists none of {', '.join(s.name for s in shapes)} in "
                    f"{', '.join(zones) or 'no zone'} for allocation={spec.allocation!r}; "
                    "try another zone or region"
                )
            cidr = await self._ssh_cidr(pool_id)
            rule = firewall_body(pool_id, self.config.network, self.config.ssh_port, cidr)
            await api.insert_firewall(rule)
        except BaseException:
            await self.close_cloud()  # teardown may never come for a pool that failed this early
            raise
        self._log.info("skyward.gcp_plan", pool=pool_id, zones=sorted(zones), shapes=[s.name for s in shapes])
        return Cluster(
            id=pool_id,
            provider=self.name,
            spec=spec,
            head_port=head_port(pool_id),
            state={"zones": zones, "firewall": rule.name},
        )

    async def _listings(self, api: ComputeApi, spec: Spec) -> dict[str, set[str]]:
        """Zone -> the machine and accelerator type names it lists."""
        region = self.config.region or spec.region
        zones = [self.config.zone] if self.config.zone else await api.zones(str(region))
        if not zones:
            raise ProvisionError(f"GCP lists no zone in region {region!r}; check GCP(region=...)")

        async def listing(zone: str) -> set[str]:
            machines, accelerators = await asyncio.gather(
                api.machine_types(zone), api.accelerator_types(zone)
            )
            return {m.name for m in machines} | {a.name for a in accelerators}

        found = await asyncio.gather(*(listing(z) for z in zones))
        return dict(zip(zones, found, strict=True))

    async def _ssh_cidr(self, pool_id: str) -> str:
        """`ssh_cidr` when set, else this client's address alone, else (the lookup failed) anyone,
        said loudly (logins stay key-only and host keys pinned)."""
        if self.config.ssh_cidr is not None:
            return self.config.ssh_cidr
        try:
            cidr = await asyncio.to_thread(client_cidr, self.config.ip_lookup_url)
        except ProvisionError as exc:
            self._log.warning(
                "skyward.gcp_ssh_open_to_anyone",
                pool=pool_id,
                message=f"WARNING: SSH to this pool's VMs is open to {ANYWHERE}: {exc}. "
                "Set GCP(ssh_cidr=...) to your network to close it.",
            )
            return ANYWHERE
        self._log.info("skyward.gcp_ssh_ingress", pool=pool_id, cidr=cidr)
        return cidr

    # -- launch (`RentedCloud.launch`) ---------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> list[Rental]:
        return plan(cluster.spec, matching(cluster.spec), cluster.state["zones"])

    def refused(self, tried: list[str]) -> str:
        return "; ".join(tried) or "no zone lists the fitting machines"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        assert self.access is not None
        shape, zone = offer.ref
        name = instance_name(cluster.id, node)
        guardian = self.boot_guardian(cluster, node, end_command(self.config.api_root))
        body = instance_body(
            name=name,
            pool_id=cluster.id,
            node=node,
            zone=zone,
            shape=shape,
            spot=offer.spot,
            image=self.config.image,
            disk_gb=int(cluster.spec.disk_gb or self.config.disk_gb),
            network=self.config.network,
            service_account=self.config.service_account,
            script=startup_script(self.access, guardian),
        )
        number = await self.compute.insert_instance(zone, body)
        return Instance(
            id=instance_id(zone, name, number),
            node=node,
            ssh_user=self.config.ssh_user,
            ssh_port=self.config.ssh_port,
            hourly_rate=offer.price,
            on_demand_rate=offer.on_demand_price,
            spot=offer.spot,
            instance_type=shape.name,
            vcpus=shape.vcpus,
            memory_gb=shape.memory_gb,
        )

    # -- refresh -------------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        from skyward.providers.probe import answers_with

        rows = await asyncio.gather(*(self.compute.instance(*split_id(i.id)) for i in instances))
        ready = []
        for instance, row in zip(instances, rows, strict=True):
            if row is not None and numeric_id(instance.id) not in ("", str(row.id)):
                row = None  # another VM of the same name: this one is gone
            if row is None or row.status in ENDED:
                status = "deleted" if row is None else row.status
                hint = (
                    '; a spot VM may have been preempted: try allocation="on-demand"' if instance.spot else ""
                )
                raise ProvisionError(
                    f"GCP VM {instance.id} (node {instance.node}) ended before it could be used "
                    f"({status}){hint}"
                )
            public, private = address_of(row)
            if row.status != "RUNNING" or not public:
                continue
            port = self.config.ssh_port
            answer = await answers_with(public, port, self.expected_host_key(instance))
            if answer is None or (answer is False and not self._grace_over(instance)):
                continue
            ready.append(
                attrs.evolve(instance, public_ip=public, private_ip=private or public, ssh_port=port)
            )
        return ready

    def _grace_over(self, instance: Instance) -> bool:
        first = self._foreign_key_since.setdefault(instance.id, time.monotonic())
        return time.monotonic() - first >= HOST_KEY_GRACE

    # -- spot notices --------------------------------------------------------------------------------

    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> SSHChannel:
        channel = await super().connect(cluster, instance, setup)
        if instance.spot:
            try:
                conn = await self.nodes.connection(instance.node, instance)
                await self.spot.watch(
                    conn,
                    instance.id,
                    instance.node,
                    self.nodes.python_bin(),
                    self.nodes.workdir(cluster, instance.node),
                )
            except Exception as exc:  # noqa: BLE001 - the node still serves; its notice is missed
                self._log.warning("skyward.gcp_spot_watch_failed", instance=instance.id, error=str(exc))
        return channel

    async def preemptions(self, cluster: Cluster, instances: list[Instance]) -> dict[str, str]:
        return self.spot.preempted([i.id for i in instances])

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        for instance in instances:
            self.spot.stop(instance.id)
        await super().terminate(cluster, instances)

    # -- destroy, leftovers, release -----------------------------------------------------------------

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Delete each VM that is still this one (a VM of the same name made since is left alone)."""

        async def delete(instance: Instance) -> None:
            if not await self.machine_gone(instance):
                await self.compute.delete_instance(*split_id(instance.id))

        await asyncio.gather(*(delete(i) for i in instances))
        for instance in instances:
            self._foreign_key_since.pop(instance.id, None)

    async def machine_gone(self, instance: Instance) -> bool:
        row = await self.compute.instance(*split_id(instance.id))
        return row is None or numeric_id(instance.id) not in ("", str(row.id))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """VMs labelled and named for this pool that Compute Engine still has (a creation whose
        answer was lost)."""
        api = await self._connect()  # `sky ls` asks a provider that never prepared
        rows = await api.instances(label_filter=f'labels.{POOL_LABEL} = "{cluster.id}"')
        return [
            Instance(id=instance_id(row.zone.rsplit("/", 1)[-1], row.name, row.id), node=-1)
            for row in rows
            if (pool_of(row.name, dict(row.labels)) or ("",))[0] == cluster.id
        ]

    async def resume_cloud(self, cluster: Cluster) -> None:
        """An adopting pool reconnects with its own credentials; the rule and zones are the parked pool's."""
        await self._connect()

    async def release(self, cluster: Cluster) -> None:
        """Delete the pool's firewall rule; the client is closed last."""
        self.spot.close()
        try:
            if cluster.state.get("firewall"):
                await self.compute.delete_firewall(cluster.state["firewall"])
        finally:
            await self.close_cloud()

    async def close_cloud(self) -> None:
        if self.api is not None:
            api, self.api = self.api, None
            await api.close()


__all__ = ["GCPProvider", "firewall_name"]
