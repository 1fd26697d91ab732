"""`RunPodProvider`: a pool's pods, created, read back and deleted through RunPod's API.

Only the API half is here (see `skyward.providers.cloud`): `prepare_cloud` reads the GPU type
listing once and plans the offers the spec allows; `launch` creates one pod per node, trying the
offers in order (an interruptible pod first when the allocation allows it, on-demand when spot
has no room) and, when none has room, raising `CapacityError` for the base to retry; `refresh`
reports pods once RunPod gives them a public IP and a port for 22; `destroy` deletes them.
Keys, host key pinning, waiting, bootstrap and workers are the base's, as for every cloud.
No expiry lease is renewed (`renew_lease` stays the base's no-op): RunPod has no tags, and a pod's
name is its pool identity, so a pod whose client is gone is ended by the node's guardian alone.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from skyward.errors import ProvisionError
from skyward.market.rental import Rental, whole_gpus
from skyward.providers.base import Cluster, Instance
from skyward.providers.naming import of_pool
from skyward.providers.rented import RentedCloud
from skyward.providers.ssh import head_port
from skyward_runpod.account import resolve_api_key
from skyward_runpod.api import LOGGER, RunPodAPI
from skyward_runpod.gpus import match_gpu_types, plan_offers
from skyward_runpod.pods import (
    cost_per_hour,
    end_command,
    gone,
    pod_request,
    reclaimed,
    ssh_address,
)
from skyward_runpod.pricing import gpu_types

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec
    from skyward_runpod.config import RunPod


class RunPodProvider(RentedCloud):
    name = "runpod"
    cloud = "RunPod"
    console = "the RunPod console"
    #: Inside the pod's container (not an SSH login, which lacks the variable); a guarded node runs
    #: `end_machine_command`, which names the pod explicitly.
    shutdown_command = 'runpodctl remove pod "$RUNPOD_POD_ID"'
    #: A parked pool's pods are adopted as they are: its offers live in `cluster.state`.
    lingers = True

    def __init__(self, config: RunPod, options: Options | None = None) -> None:
        super().__init__(options, python=config.python)
        self.config = config
        # The key is resolved here, when a pool starts (never in the config): a missing one fails
        # now, naming RUNPOD_API_KEY, before anything is asked of RunPod.
        self.api = RunPodAPI(resolve_api_key(config.api_key), config.rest_url, config.gql_url)
        self._log = structlog.get_logger(LOGGER)  # under `skyward`, so it reaches Skyward's log file

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        """The pod deletes itself by its own id (`pods.end_command`) when its client is gone."""
        return end_command(self.config.rest_url, instance.id)

    # -- prepare -------------------------------------------------------------------------------------

    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check the key and plan the offers (GPU types, clouds, interruptible or not); rent nothing.

        An accelerator RunPod does not have fails here, naming the close types, before any pod.
        """
        try:
            offers = await self._plan(spec)
        except BaseException:
            await self.api.close()  # teardown may never come for a pool that failed this early
            raise
        self._log.info(
            "skyward.runpod_plan", pool=pool_id, image=self.config.container_image,
            offers=[str(o) for o in offers],
        )
        return Cluster(
            id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id),
            state={"offers": tuple(offers)},
        )

    async def _plan(self, spec: Spec) -> list[Rental]:
        if spec.accelerator is None:
            offers = plan_offers((), 0, self.config.clouds, spec.allocation)
            await self.api.list_pods()  # proves the key before anything is created
        else:
            count = whole_gpus(spec.accelerator.count, "RunPod")
            types = match_gpu_types(spec.accelerator, await gpu_types(self.api), count)
            offers = plan_offers(types, count, self.config.clouds, spec.allocation, spec.max_hourly_cost)
        return offers

    # -- launch --------------------------------------------------------------------------------------

    async def offers_for(self, cluster: Cluster, node: int) -> tuple[Rental, ...]:
        """The offers planned at prepare (`RentedCloud.launch` tries them in turn)."""
        offers: tuple[Rental, ...] = cluster.state["offers"]
        return offers

    def refused(self, tried: list[str]) -> str:
        return f"tried: {'; '.join(tried)}"

    async def create_on(self, cluster: Cluster, node: int, offer: Rental) -> Instance:
        assert self.access is not None, "prepare() makes the pool's keys before launch()"
        request = pod_request(
            config=self.config, spec=cluster.spec, offer=offer, access=self.access,
            pool_id=cluster.id, node=node,
            guardian=self.boot_guardian(cluster, node, end_command(self.config.rest_url, None)),
        )
        return self._instance(await self.api.create_pod(request), node, offer)

    def _instance(self, pod: dict[str, Any], node: int, offer: Rental) -> Instance:
        gpu = pod.get("gpu") if isinstance(pod.get("gpu"), dict) else {}
        label = gpu.get("displayName") or (offer.ref[0].display_name if offer.ref else "cpu")
        return Instance(
            id=str(pod["id"]), node=node, ssh_user=self.config.ssh_user,
            hourly_rate=cost_per_hour(pod) or offer.price, on_demand_rate=offer.on_demand_price,
            spot=bool(pod.get("interruptible", offer.spot)),
            instance_type=f"{offer.offer.accelerator_count:g}x {label}" if offer.ref else label,
            vcpus=int(pod.get("vcpuCount") or 0), memory_gb=float(pod.get("memoryInGb") or 0.0),
        )

    # -- refresh, destroy ----------------------------------------------------------------------------

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        """The pods that now have a public IP and a port for 22; a pod that ended is an error."""
        ready = []
        pods = await asyncio.gather(*(self.api.get_pod(i.id) for i in instances))
        for instance, pod in zip(instances, pods, strict=True):
            if gone(pod):
                status = "deleted" if pod is None else pod.get("desiredStatus")
                raise ProvisionError(
                    f"RunPod pod {instance.id} (node {instance.node}) ended before it could be used "
                    f"({status}); "
                    "an interruptible pod may have been reclaimed: try allocation=\"on-demand\""
                )
            assert pod is not None
            address = ssh_address(pod)
            if address is None:
                continue
            ip, port = address
            ready.append(attrs.evolve(
                instance, public_ip=ip, private_ip=ip, ssh_port=port,
                hourly_rate=cost_per_hour(pod) or instance.hourly_rate,
                vcpus=int(pod.get("vcpuCount") or instance.vcpus),
                memory_gb=float(pod.get("memoryInGb") or instance.memory_gb),
            ))
        return ready

    async def preemptions(self, cluster: Cluster, instances: list[Instance]) -> dict[str, str]:
        """The interruptible pods RunPod has taken back (`pods.reclaimed`), read from the API."""
        pods = await asyncio.gather(*(self.api.get_pod(i.id) for i in instances), return_exceptions=True)
        taken = {}
        for instance, pod in zip(instances, pods, strict=True):
            why = None if isinstance(pod, BaseException) else reclaimed(pod)
            if why is not None:
                taken[instance.id] = why
        return taken

    async def delete_machines(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Delete every pod (together); one RunPod no longer knows is already gone."""
        deletes = (self.api.delete_pod(i.id) for i in instances)
        results = await asyncio.gather(*deletes, return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """Pods named for this pool that RunPod still lists (a creation whose answer was lost)."""
        return [
            Instance(id=str(p["id"]), node=-1)
            for p in await self.api.list_pods()
            if p.get("id") and of_pool(p.get("name"), cluster.id) is not None
            and p.get("desiredStatus") != "TERMINATED"
        ]

    async def release(self, cluster: Cluster) -> None:
        """Nothing shared was created; the HTTP session is closed here, last."""
        await self.api.close()
