"""Skyward's pods on RunPod found and deleted without a pool: RunPod's answer to `sky ls` / `sky down`.

RunPod has no tags: a pod is Skyward's when its name is `skyward-<pool>-<node>` (`pods.pod_name`)
and, where RunPod returns the pod's environment, its `SKYWARD_POOL` variable names the same pool.
Nothing else is listed or deleted, and `end` reads each pod back by id before deleting it. A pool
creates nothing on RunPod besides its pods, so ending a pool is deleting them.

The key is `$RUNPOD_API_KEY`; `$RUNPOD_API_URL` / `$RUNPOD_GRAPHQL_URL` point the command at
another endpoint (a proxy, a test server), as `RunPod(api_url=...)` does a pool. RunPod has no
lease: its pods never count as expired.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar

import attrs

from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus, locate_secret
from skyward.providers.sweep import Ended, Machine, SweepReport, end_each, named_pool, parse_time
from skyward_runpod.account import API_KEY_VARIABLE, GRAPHQL_URL, REST_URL
from skyward_runpod.pods import NAME_PREFIX, POOL_VARIABLE

URL_VARIABLE = "RUNPOD_API_URL"
GRAPHQL_URL_VARIABLE = "RUNPOD_GRAPHQL_URL"
T = TypeVar("T")


def pool_of(pod: dict[str, Any]) -> tuple[str, int] | None:
    """(pool, node) of a pod Skyward made, else None: its name, checked against its environment."""
    found = named_pool(NAME_PREFIX, pod.get("name"))
    env = pod.get("env")
    if found is None or not isinstance(env, dict) or POOL_VARIABLE not in env:
        return found
    pool = str(env[POOL_VARIABLE])
    return (pool, found[1]) if str(pod["name"]).rsplit("-", 1)[0] == f"{NAME_PREFIX}{pool}" else None


@attrs.define
class RunPodSweeper:
    name: str = "RunPod"

    def credentials(self) -> CredentialStatus:
        return locate_secret(API_KEY_VARIABLE)

    def _run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        from skyward_runpod.api import RunPodAPI

        return run_closing(lambda: RunPodAPI(
            os.environ[API_KEY_VARIABLE].strip(), os.environ.get(URL_VARIABLE) or REST_URL,
            os.environ.get(GRAPHQL_URL_VARIABLE) or GRAPHQL_URL,
        ), work)

    def machines(self, region: str | None = None) -> list[Machine]:
        async def work(api: Any) -> list[dict[str, Any]]:
            return list(await api.list_pods())

        return [self._machine(p) for p in self._run(work) if pool_of(p) is not None]

    def _machine(self, pod: dict[str, Any]) -> Machine:
        pool, node = pool_of(pod) or ("", None)
        gpu = pod.get("gpu") if isinstance(pod.get("gpu"), dict) else None
        kind = (f"{gpu.get('count', 1)}x {gpu.get('displayName') or gpu.get('id')}" if gpu
                else f"CPU, {pod.get('vcpuCount', '?')} vCPU")
        if pod.get("interruptible"):
            kind += " (spot)"
        machine = pod.get("machine") if isinstance(pod.get("machine"), dict) else {}
        price = pod.get("adjustedCostPerHr", pod.get("costPerHr"))
        try:
            hourly = float(price) if price is not None else None
        except (TypeError, ValueError):
            hourly = None
        return Machine(
            provider=self.name, pool=pool, node=node, id=str(pod.get("id")), instance_type=kind,
            region=str(machine.get("dataCenterId") or pod.get("dataCenterId") or "?"),
            state=str(pod.get("desiredStatus") or "?").lower(),
            launched_at=parse_time(pod.get("lastStartedAt") or pod.get("createdAt")), hourly_price=hourly,
        )

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        async def work(api: Any) -> list[Ended]:
            async def still_ours(machine: Machine) -> bool:
                pod = await api.get_pod(machine.id)
                found = pool_of(pod) if pod is not None else None
                return found is not None and found[0] == machine.pool

            return await end_each(self.name, machines, still_ours, lambda m: api.delete_pod(m.id), "name")

        return SweepReport(tuple(self._run(work))) if machines else SweepReport()
