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
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus, locate_secret
from skyward.providers.named_sweep import NamedSweeper, Row
from skyward.providers.sweep import Machine, named_pool, parse_time
from skyward_runpod.account import API_KEY_VARIABLE, GRAPHQL_URL, REST_URL
from skyward_runpod.pods import NAME_PREFIX, POOL_VARIABLE

URL_VARIABLE = "RUNPOD_API_URL"
GRAPHQL_URL_VARIABLE = "RUNPOD_GRAPHQL_URL"


def pool_of(pod: dict[str, Any] | None) -> tuple[str, int] | None:
    """(pool, node) of a pod Skyward made, else None: its name, checked against its environment."""
    pod = pod or {}
    found = named_pool(NAME_PREFIX, pod.get("name"))
    env = pod.get("env")
    if found is None or not isinstance(env, dict) or POOL_VARIABLE not in env:
        return found
    pool = str(env[POOL_VARIABLE])
    return (pool, found[1]) if str(pod["name"]).rsplit("-", 1)[0] == f"{NAME_PREFIX}{pool}" else None


@attrs.define
class RunPodSweeper(NamedSweeper):
    name: str = "RunPod"

    def credentials(self) -> CredentialStatus:
        return locate_secret(API_KEY_VARIABLE)

    def client(self) -> Any:
        from skyward_runpod.api import RunPodAPI

        return RunPodAPI(
            os.environ[API_KEY_VARIABLE].strip(), os.environ.get(URL_VARIABLE) or REST_URL,
            os.environ.get(GRAPHQL_URL_VARIABLE) or GRAPHQL_URL,
        )

    async def rows(self, api: Any) -> list[Row]:
        return list(await api.list_pods())

    async def row(self, api: Any, machine_id: str) -> Row | None:
        return await api.get_pod(machine_id)

    async def delete(self, api: Any, machine_id: str) -> object:
        return await api.delete_pod(machine_id)

    def pool_of(self, row: Row | None) -> tuple[str, int] | None:
        return pool_of(row)

    def machine(self, pod: Row, pool: str, node: int) -> Machine:
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
