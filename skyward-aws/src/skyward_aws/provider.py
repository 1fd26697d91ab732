"""`AWSProvider`: EC2 machines for a pool, made in `prepare`/`provision` and deleted at the end.

The order is chosen so that a mistake costs nothing: credentials, the instance type, the image and
the price cap are all settled before anything is created, and nothing billable exists until
`launch`. Each node is one `RunInstances` call, tagged with the pool and node, whose user data
(cloud-init) installs the pool's host key and login key, so the pool pins the host key and never
trusts a first connection. `InstanceInitiatedShutdownBehavior=terminate` makes a worker's own
shutdown (its client went silent past `Spec.ttl`) delete the machine instead of leaving a stopped
one with a disk that bills.

Spot: `allocation="spot"` asks for spot only, and a capacity error is retried (`Options.
provision_timeout`, `provision_retry_delay`, `max_provision_attempts`) and then raised.
`"spot-if-available"` and `"cheapest"` ask for spot and fall back to on-demand, node by node, when
spot has no capacity; `"on-demand"` never asks for spot.

Hardening: the security group opens `ssh_port` only to this client's public address (`/32`, from
`AWS(ip_lookup_url=...)`; a failed lookup falls back to `0.0.0.0/0` with a loud warning), and
`AWS(ssh_cidr=...)` overrides it; machines require IMDSv2 (session tokens for the metadata
service, so a server-side request forgery on the node cannot read the instance role's keys).
Everything made (machines, their disks, the group, the key pair) carries the pool's tags, and the
live client moves `skyward:expires` forward (`renew_lease`) while the pool runs.

Teardown terminates every machine tagged with the pool (also one whose launch answer was lost),
waits until they are gone (`release_timeout`: the pool's `stop()` waits that long, then names the
machines not confirmed gone), and only then deletes the security group (AWS refuses while a
machine's network interface uses it), any disk left, and the key pair.

This module is the provider's sequence; the type and its price are `choice.py`'s, one machine's
request `launching.py`'s, and the teardown's order `teardown.py`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import botocore.exceptions
import structlog

from skyward.errors import CapacityError, ProvisionError
from skyward.providers.base import Cluster, Instance, NodeSetup
from skyward.providers.cloud import CloudProvider
from skyward.providers.ssh import head_port
from skyward_aws import regions, resources, teardown
from skyward_aws.catalog import InstanceType
from skyward_aws.choice import choose_type
from skyward_aws.clients import (
    LOGGER,
    Clients,
    check_credentials,
    clients_for,
    error_code,
    resolve_region,
    translate,
)
from skyward_aws.images import Image, resolve_image
from skyward_aws.launching import run_instance
from skyward_aws.spot import POLL_INTERVAL, SpotNotices

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward.transport.ssh import SSHChannel
    from skyward_aws.config import AWS

T = TypeVar("T")

#: Who may reach `ssh_port` when the client's own address could not be learnt.
ANYWHERE = "0.0.0.0/0"
#: allocation -> how to buy: spot only, on-demand only, or spot first then on-demand.
MARKETS = {
    "spot": "spot", "on-demand": "on-demand", "spot-if-available": "spot-first", "cheapest": "spot-first",
}


@attrs.frozen
class Plan:
    """What `prepare_cloud` settled, kept in `Cluster.state["aws"]` for launch and release."""

    region: str
    instance_type: InstanceType
    image: Image
    market: str
    tags: resources.Tags
    key_name: str = ""
    key_id: str = ""
    security_group: str = ""
    created_group: bool = False
    spot_price: float | None = None
    on_demand_price: float | None = None


class AWSProvider(CloudProvider):
    name = "aws"
    #: A parked pool is resumed from its plan (`resume_cloud`): its tags, group and key pair go on.
    lingers = True

    @property
    def release_timeout(self) -> float:  # type: ignore[override]
        """Termination can take minutes on EC2, and the group is deleted only after it."""
        return teardown.release_timeout()

    def __init__(self, config: AWS, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self._log = structlog.get_logger(LOGGER)
        self.config = config
        self._clients: Clients | None = None
        #: Spot interruption notices the nodes read from their metadata service (`spot`).
        self.spot = SpotNotices(
            config.metadata_url, min(POLL_INTERVAL, self.options.reconcile_tick_interval),
            config.replace_on_rebalance,
        )

    @property
    def clients(self) -> Clients:
        if self._clients is None:
            raise ProvisionError("aws: the provider was used before prepare()")
        return self._clients

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """boto3 blocks: every call runs in a thread, so the pool's loop keeps serving."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    # -- prepare -----------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        # A failure here leaves no login key behind: CloudProvider.prepare removes it.
        region = await self._call(resolve_region, self.config, spec.region)
        await self._call(regions.remember, region)  # where `sky ls` looks for it later
        self._clients = await self._call(clients_for, self.config, region)
        owner = await self._call(check_credentials, self.clients)
        plan = await self._plan(spec, pool_id, region, owner)
        plan = await self._create_shared(plan, pool_id)
        self._log.info(
            "skyward.aws_prepared", pool=pool_id, region=region, instance_type=plan.instance_type.name,
            image=plan.image.id, market=plan.market, security_group=plan.security_group,
        )
        return Cluster(
            id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id), state={"aws": plan},
        )

    async def resume_cloud(self, cluster: Cluster) -> None:
        """A parked pool's clients, for the region its plan (security group, key pair) is in."""
        plan: Plan = cluster.state["aws"]
        self._clients = await self._call(clients_for, self.config, plan.region)

    async def _plan(self, spec: Spec, pool_id: str, region: str, owner: str) -> Plan:
        market = MARKETS[spec.allocation]
        usage = {"spot": "spot", "on-demand": "on-demand"}.get(market)
        kind, spot, on_demand = await self._call(
            choose_type, self.clients, self.config, spec, usage, self._log
        )
        accelerated = kind.accelerator_count > 0
        image = await self._call(resolve_image, self.clients, self.config.ami, kind.architecture, accelerated)
        tags = resources.Tags.create(pool_id, owner, self.config.expires_after)
        return Plan(region, kind, image, market, tags, spot_price=spot, on_demand_price=on_demand)

    async def _create_shared(self, plan: Plan, pool_id: str) -> Plan:
        """Import the login key and create the security group; undo the key if the group fails."""
        assert self.access is not None
        key_name, key_id = await self._call(
            resources.import_key, self.clients, pool_id, self.access.login_key, plan.tags
        )
        plan = attrs.evolve(plan, key_name=key_name, key_id=key_id)
        if self.config.security_group_id is not None:
            return attrs.evolve(plan, security_group=self.config.security_group_id)
        try:
            vpc = await self._call(resources.vpc_of, self.clients, self.config.subnet_id)
            cidr = await self._ssh_cidr(pool_id)
            group = await self._call(
                resources.create_security_group, self.clients, pool_id, vpc, self.config.ssh_port,
                cidr, plan.tags,
            )
        except BaseException:
            await asyncio.shield(self._call(resources.delete_key, self.clients, key_name))
            raise
        return attrs.evolve(plan, security_group=group, created_group=True)

    async def _ssh_cidr(self, pool_id: str) -> str:
        """Who may reach `ssh_port`: `ssh_cidr` when set, else this client's address alone, else
        (the lookup failed) anyone, said loudly: logins stay key-only and host keys pinned, but
        the port is open to the internet's scanners."""
        port = self.config.ssh_port
        if self.config.ssh_cidr is not None:
            self._log.info("skyward.aws_ssh_ingress", pool=pool_id, cidr=self.config.ssh_cidr, port=port)
            return self.config.ssh_cidr
        try:
            cidr = await self._call(resources.client_cidr, self.config.ip_lookup_url)
        except ProvisionError as exc:
            self._log.warning(
                "skyward.aws_ssh_open_to_anyone", pool=pool_id, cidr=ANYWHERE, port=port,
                message=(
                    f"WARNING: port {port} of this pool's machines is open to the whole internet "
                    f"({ANYWHERE}): {exc}. Set AWS(ssh_cidr=...) to your network to close it."
                ),
            )
            return ANYWHERE
        self._log.warning(
            "skyward.aws_ssh_ingress", pool=pool_id, cidr=cidr, port=port,
            message=f"port {port} of this pool's machines is open only to this client's address {cidr}",
        )
        return cidr

    # -- launch --------------------------------------------------------------------------------------

    async def launch(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """One machine per node, launched together; if one fails for good, the others are deleted."""
        return await self.launch_together(cluster, nodes, lambda n: self._launch_node(cluster, n))

    async def _launch_node(self, cluster: Cluster, node: int) -> Instance:
        plan: Plan = cluster.state["aws"]

        async def attempt() -> Instance:
            if plan.market != "on-demand":
                try:
                    return await self._call(self._run, cluster, node, spot=True)
                except CapacityError as exc:
                    if plan.market == "spot":
                        raise
                    self._log.info("skyward.aws_spot_fallback", pool=cluster.id, node=node, reason=str(exc))
            return await self._call(self._run, cluster, node, spot=False)

        return await self.retry_capacity(attempt, what=f"aws node {node} ({plan.instance_type.name})")

    def user_data(self, cluster: Cluster | None = None, node: int = 0) -> str:
        """cloud-init: our host key and the login key, the node's guardian started at boot as the
        login user (with `cluster`); and sshd on `ssh_port` when it is not 22."""
        assert self.access is not None
        guardian = self.boot_guardian(cluster, node, self.shutdown_command) if cluster is not None else None
        data = self.access.cloud_config(guardian, user=self.config.username)
        if self.config.ssh_port != 22:
            port = self.config.ssh_port
            data += (
                "bootcmd:\n"
                f"  - [sh, -c, \"mkdir -p /etc/ssh/sshd_config.d && echo 'Port {port}' > "
                "/etc/ssh/sshd_config.d/60-skyward-port.conf\"]\n"
            )
        return data

    def _run(self, cluster: Cluster, node: int, spot: bool) -> Instance:
        """`RunInstances` for one node (blocking)."""
        user_data = self.user_data(cluster, node)
        return run_instance(self.clients, self.config, cluster, node, spot, user_data, self._log)

    # -- reading back ----------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        if not instances:
            return []
        rows = await self._call(self._describe, [i.id for i in instances])
        ready = []
        for instance in instances:
            row = rows.get(instance.id)
            if row is None:  # just made: EC2's listing can lag behind RunInstances for a moment
                continue
            state = row["State"]["Name"]
            if state in ("shutting-down", "terminated", "stopping", "stopped"):
                reason = (row.get("StateReason") or {}).get("Message") or state
                raise ProvisionError(
                    f"aws: {instance.id} (node {instance.node}, {instance.instance_type}) is {state} "
                    f"before it was reachable: {reason}"
                )
            private = str(row.get("PrivateIpAddress") or "")
            public = str(row.get("PublicIpAddress") or "")
            address = private if self.config.use_private_ip else public
            if state == "running" and address:
                ready.append(attrs.evolve(
                    instance, public_ip=public or private, private_ip=private or public,
                    spot=row.get("InstanceLifecycle") == "spot",
                ))
        return ready

    def _describe(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        try:
            answer = self.clients.ec2.describe_instances(InstanceIds=ids)
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) == "InvalidInstanceID.NotFound" and len(ids) > 1:
                found: dict[str, dict[str, Any]] = {}
                for one in ids:
                    found.update(self._describe([one]))
                return found
            if error_code(exc) == "InvalidInstanceID.NotFound":
                return {}
            raise translate(exc, f"describing {', '.join(ids)}") from None
        return {
            str(i["InstanceId"]): i for r in answer.get("Reservations", []) for i in r.get("Instances", [])
        }

    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> SSHChannel:
        """SSH to the private address when `use_private_ip` (the instance keeps both for the worker)."""
        if self.config.use_private_ip:
            instance = attrs.evolve(instance, public_ip=instance.private_ip)
        channel = await super().connect(cluster, instance, setup)
        if instance.spot:
            await self._watch_spot(cluster, instance)
        return channel

    async def _watch_spot(self, cluster: Cluster, instance: Instance) -> None:
        """Have a spot node watch its metadata for interruption notices (`spot`)."""
        try:
            conn = await self.nodes.connection(instance.node, instance)
            await self.spot.watch(conn, instance.id, instance.node, self.nodes.python_bin(),
                                  self.nodes.workdir(cluster, instance.node))
        except Exception as exc:  # noqa: BLE001 - the node still serves; its notices are missed
            self._log.warning("skyward.aws_spot_watch_failed", instance=instance.id, error=str(exc))

    async def preemptions(self, cluster: Cluster, instances: list[Instance]) -> dict[str, str]:
        return self.spot.preempted([i.id for i in instances])

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        for instance in instances:
            self.spot.stop(instance.id)
        await super().terminate(cluster, instances)

    # -- the lease -------------------------------------------------------------------------------------

    async def renew_lease(self, cluster: Cluster, instances: list[Instance], until: float) -> None:
        """Move `skyward:expires` to `until` on everything of the pool: its machines, their disks,
        the security group it made and the key pair."""
        plan: Plan | None = cluster.state.get("aws")
        if plan is None or self._clients is None:
            return
        volumes = await self._call(resources.pool_volumes, self.clients, cluster.id)
        ids = [i.id for i in instances] + volumes
        ids += [plan.security_group] if plan.created_group else []
        ids += [plan.key_id] if plan.key_id else []
        expires = resources.expiry(until)
        await self._call(resources.renew_expiry, self.clients, ids, expires)
        self._log.debug("skyward.aws_lease_renewed", pool=cluster.id, expires=expires, resources=len(ids))

    # -- deleting ------------------------------------------------------------------------------------

    async def destroy(self, cluster: Cluster, instances: list[Instance]) -> None:
        ids = [i.id for i in instances]
        if ids:
            await self._call(resources.terminate, self.clients, ids)
            self._log.info("skyward.aws_terminated", pool=cluster.id, instances=", ".join(ids))

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        rows = await self._call(resources.pool_instances, await self._pool_clients(cluster), cluster.id,
                                ("pending", "running", "stopping", "stopped"))
        return [
            Instance(id=str(r["InstanceId"]), node=int(_tag(r, resources.NODE_TAG) or -1)) for r in rows
        ]

    async def _pool_clients(self, cluster: Cluster) -> Clients:
        """The clients of the pool's region; on a provider that did not prepare the pool (`sky ls`
        in another process asks a fresh one), made from the region its plan recorded."""
        if self._clients is None:
            plan: Plan | None = cluster.state.get("aws")
            region = plan.region if plan is not None else await self._call(resolve_region, self.config, None)
            self._clients = await self._call(clients_for, self.config, region)
        return self._clients

    async def release(self, cluster: Cluster) -> None:
        """Terminate whatever of the pool is still listed, wait for it to go, then delete the
        security group and the key pair; raise naming what could not be deleted."""
        plan: Plan | None = cluster.state.get("aws")
        if plan is None or self._clients is None:
            return

        async def terminate_left() -> None:
            await self.destroy(cluster, await self.leftovers(cluster))

        await teardown.release_pool(self.clients, cluster.id, plan, terminate_left, self._log)


def _tag(row: dict[str, Any], key: str) -> str | None:
    for tag in row.get("Tags") or []:
        if tag.get("Key") == key:
            return str(tag.get("Value"))
    return None
