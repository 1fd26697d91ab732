"""`VastAIProvider`: rents one Vast machine per node and hands it to the shared cloud half.

`prepare_cloud` searches the marketplace once (nothing billable) and fails naming the filters
when nothing matches. `launch` rents offers cheapest-first in the allocation's order, one machine
per node; an offer rented away meanwhile is skipped for the next one, and when every offer has
been tried the market is searched again after a backoff (`CloudProvider.retry_capacity`).
`refresh` reads instances back and reports those whose sshd answers with the pool's host key;
`destroy` destroys them. `leftovers` lists the account's instances and picks this pool's by label,
so teardown also destroys a machine whose create call never answered. SSH, bootstrap and workers
are `CloudProvider`'s. Vast has no tags, so the label carries the pool's lease too:
`skyward-<pool>-node-<node>@<epoch seconds>`, written at rent time with the boot guardian's initial
lease and moved forward by `renew_lease` while the pool runs, so `sky down --expired` can tell an
abandoned machine from a long job (`sweep.pool_of` reads it back).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import attrs
import structlog

from skyward.errors import CapacityError, ProvisionError
from skyward.guardian.boot import SOURCE_VARIABLE, packed
from skyward.market.rental import Rental
from skyward.providers.base import Cluster, Instance
from skyward.providers.cloud import HOST_KEY_VARIABLE, CloudProvider
from skyward.providers.naming import of_pool
from skyward.providers.probe import answers_with
from skyward.providers.ssh import head_port
from skyward_vastai.account import resolve_api_key
from skyward_vastai.api import VastAPI
from skyward_vastai.machine import onstart_script, shutdown_command, ssh_address
from skyward_vastai.market import SearchFilters, describe_none, search

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_vastai.config import VastAI

#: `actual_status` values after which an instance never comes up (Vast's documented list).
FAILED_STATES = ("exited", "offline")
#: Status values of an instance already on its way out: `leftovers` leaves it alone, since
#: destroying it again would only fail or repeat work Vast is already doing.
GONE_STATES = ("destroying", "destroyed", "deleted", "terminated")


class VastAIProvider(CloudProvider):
    name = "vastai"
    #: A parked pool is adopted by label and pinned host key; `resume_cloud` restores the search.
    lingers = True

    def __init__(self, config: VastAI, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        # Named under "skyward" so these lines reach Skyward's log file (structlog would otherwise
        # name the logger after this module, outside the `skyward` logger that has the handlers).
        self._log = structlog.get_logger("skyward.providers.vastai")
        self.config = config
        self.api = VastAPI(resolve_api_key(config.api_key), config.api_url)
        self.shutdown_command = shutdown_command(config.api_url)
        self._query: SearchFilters | None = None
        self._allocation = "on-demand"
        self._offers: list[Rental] = []
        self._tried: set[int] = set()
        #: instance id -> machine id, of every instance this pool rented and has not destroyed.
        self._machines: dict[str, int] = {}
        #: instance id -> when it first answered with a host key other than ours.
        self._foreign_key_since: dict[str, float] = {}

    # -- prepare -----------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        self._query = SearchFilters.for_spec(spec, self.config)
        self._allocation = spec.allocation
        self._offers = await search(self.api, self._query, spec.allocation)
        if not self._offers:
            raise describe_none(self._query)
        best = self._offers[0]
        self._log.info(
            "skyward.vastai_offers", offers=len(self._offers), cheapest=best.price,
            gpu=best.offer.instance_type, spot=best.spot,
        )
        return Cluster(id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id))

    # -- launch ------------------------------------------------------------------------------------

    async def resume_cloud(self, cluster: Cluster) -> None:
        """A parked pool's search, for nodes it may still launch (offers are found when needed)."""
        self._query = SearchFilters.for_spec(cluster.spec, self.config)
        self._allocation = cluster.spec.allocation
        self._offers = []

    async def launch(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """Rent one machine per node, one after the other so that no two nodes share a machine."""
        made: list[Instance] = []
        try:
            for node in nodes:
                made.append(await self.retry_capacity(
                    lambda node=node: self._rent(cluster, node), what=f"vastai node {node}"
                ))
        except BaseException:
            if made:
                await asyncio.shield(self._destroy_quietly(cluster, made))
            raise
        return made

    async def _rent(self, cluster: Cluster, node: int) -> Instance:
        assert self._query is not None
        candidates = self._candidates()
        if not candidates:  # every offer tried: the market has moved, look again
            self._offers = await search(self.api, self._query, self._allocation)
            self._tried.clear()
            candidates = self._candidates()
        for offer in candidates:
            ask = offer.ref
            self._tried.add(ask.id)
            try:
                instance_id = await self.api.create(ask.id, **self._request(cluster, node, offer))
            except CapacityError as exc:
                self._log.info("skyward.vastai_offer_taken", node=node, offer=ask.id, error=str(exc))
                continue
            self._machines[str(instance_id)] = ask.machine_id
            machine = offer.offer
            self._log.info(
                "skyward.vastai_rented", node=node, instance=instance_id, offer=ask.id,
                gpu=machine.instance_type, price=offer.price, spot=offer.spot,
            )
            return Instance(
                id=str(instance_id), node=node, ssh_user=self.config.ssh_user, hourly_rate=offer.price,
                on_demand_rate=offer.on_demand_price, spot=offer.spot, instance_type=machine.instance_type,
                vcpus=int(machine.vcpus or 0), memory_gb=machine.memory_gb or 0.0,
            )
        raise CapacityError(
            f"vastai: every offer matching {self._query.summary} is taken or on a machine this pool "
            "already uses; will search again"
        )

    def _candidates(self) -> list[Rental]:
        busy = set(self._machines.values())
        return [o for o in self._offers if o.ref.id not in self._tried and o.ref.machine_id not in busy]

    @staticmethod
    def label_prefix(cluster: Cluster) -> str:
        """The start of every label this pool gives its instances (`_request`), and of no other
        pool's: the trailing `-node-` keeps pool `a` from matching pool `ab`."""
        return f"skyward-{cluster.id}-node-"

    def _request(self, cluster: Cluster, node: int, offer: Rental) -> dict[str, object]:
        """The create-instance fields: image, disk, our keys (env + onstart), a label with the pool."""
        assert self.access is not None
        guardian = self.boot_guardian(cluster, node, self.shutdown_command)
        fields: dict[str, object] = {
            "image": self.config.docker_image,
            "disk": float(self._query.disk_gb if self._query else self.config.disk_gb),
            "env": {HOST_KEY_VARIABLE: self.access.host_key_b64, SOURCE_VARIABLE: packed()},
            "onstart_cmd": onstart_script(self.access, guardian=guardian),
            "label": leased_label(self.label_prefix(cluster), node, time.time() + guardian.initial),
            "ssh": True,
            "direct": True,
            "cancel_unavail": True,
        }
        if offer.spot:
            fields["bid_price"] = offer.ref.bid
        return fields

    # -- refresh -----------------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        rows = await asyncio.gather(*(self.api.show(int(i.id)) for i in instances))
        ready = []
        for instance, row in zip(instances, rows, strict=True):
            reachable = await self._reachable(instance, row)
            if reachable is not None:
                ready.append(reachable)
        return ready

    async def _reachable(self, instance: Instance, row: dict[str, object] | None) -> Instance | None:
        where = f"instance {instance.id} (node {instance.node})"
        if row is None:
            raise ProvisionError(f"vastai: {where} no longer exists (destroyed by its host or the account?)")
        status = str(row.get("actual_status") or "")
        if status in FAILED_STATES:
            raise ProvisionError(
                f"vastai: {where} is {status}: {row.get('status_msg') or 'no message'}; try another offer"
            )
        if instance.spot and status == "stopped" and row.get("intended_status") == "stopped":
            raise CapacityError(f"vastai: {where} was outbid before it started; raise max_hourly_cost")
        address = ssh_address(row) if status == "running" else None
        if address is None:
            return None
        host, port = address
        answer = await answers_with(host, port, self.expected_host_key(instance))
        if answer is None:
            return None
        if answer is False and not self._grace_over(instance):
            return None
        # Our key, or someone else's past the grace: handed over either way, and a foreign key is
        # then refused by the pinned check (HostKeyError), which is what the user should see.
        return attrs.evolve(instance, public_ip=host, private_ip=host, ssh_port=port)

    async def renew_lease(self, cluster: Cluster, instances: list[Instance], until: float) -> None:
        """Move the lease in each machine's label to `until` (epoch seconds)."""
        prefix = self.label_prefix(cluster)
        await asyncio.gather(*(
            self.api.label(int(i.id), leased_label(prefix, i.node, until)) for i in instances if i.node >= 0
        ))

    async def preemptions(self, cluster: Cluster, instances: list[Instance]) -> dict[str, str]:
        """The bid (interruptible) instances that were outbid: Vast stops such an instance while a
        higher bid holds its machine (`actual_status: stopped`), and it serves nothing meanwhile."""
        bids = [i for i in instances if i.spot]
        rows = await asyncio.gather(*(self.api.show(int(i.id)) for i in bids), return_exceptions=True)
        taken = {}
        for instance, row in zip(bids, rows, strict=True):
            if isinstance(row, dict) and row.get("actual_status") == "stopped":
                taken[instance.id] = f"outbid on Vast ({row.get('status_msg') or 'stopped'})"
        return taken

    def _grace_over(self, instance: Instance) -> bool:
        """A new machine may briefly answer with Vast's key (see `machine`); past the grace, no."""
        first = self._foreign_key_since.setdefault(instance.id, time.monotonic())
        over = time.monotonic() - first >= self.config.host_key_grace
        if not over:
            self._log.info("skyward.vastai_host_key_pending", instance=instance.id, node=instance.node)
        return over

    # -- leftovers ---------------------------------------------------------------------------------

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """This pool's instances Vast still lists, found by label: a create whose answer was lost
        (an error or a dropped connection after Vast had rented the machine) left one whose id we
        never got, and it bills until destroyed. Instances already being destroyed are skipped."""
        left = []
        for row in await self.api.instances():
            label = str(row.get("label") or "").partition("@")[0]  # the lease after `@`
            if of_pool(label, cluster.id, infix="node-") is None:
                continue
            states = {str(row.get(k) or "") for k in ("actual_status", "intended_status", "cur_state")}
            if states & set(GONE_STATES):
                continue
            left.append(Instance(id=str(row["id"]), node=-1))
        return left

    # -- destroy -----------------------------------------------------------------------------------

    async def destroy(self, cluster: Cluster, instances: list[Instance]) -> None:
        results = await asyncio.gather(
            *(self.api.destroy(int(i.id)) for i in instances), return_exceptions=True
        )
        failures = []
        for instance, result in zip(instances, results, strict=True):
            if isinstance(result, BaseException):
                failures.append(f"{instance.id}: {result}")
                continue
            self._machines.pop(instance.id, None)
            self._foreign_key_since.pop(instance.id, None)
            self._log.info("skyward.vastai_destroyed", instance=instance.id, node=instance.node)
        if failures:
            raise ProvisionError(
                "vastai: could not destroy " + "; ".join(failures)
                + " — destroy them at https://cloud.vast.ai/instances/ to stop billing"
            )


def leased_label(prefix: str, node: int, until: float) -> str:
    """A machine's label: the pool's prefix, its node, and when its lease lapses (epoch seconds)."""
    return f"{prefix}{node}@{int(until)}"
