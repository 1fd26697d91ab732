"""A RunPod API on loopback whose pods are real OpenSSH servers.

It answers the calls the provider makes, as RunPod documents them: REST v1 `POST /v1/pods`,
`GET /v1/pods`, `GET /v1/pods/{id}`, `DELETE /v1/pods/{id}`, and GraphQL `gpuTypes` on
`POST /graphql`, every one behind `Authorization: Bearer <key>`. Create requests are checked
field by field against the documented body (unknown fields, wrong types, unknown GPU type ids and
bad port specs are refused with 400), so a typo in the provider fails here as it would there.

A created pod boots for real: the fake reads `SKYWARD_SSH_HOST_KEY` (the base64 private host key)
and `PUBLIC_KEY` from the pod's env, as the container's start command would, and starts an sshd
(`ssh_hosts.start_machine`) on a fresh loopback address (127.0.1.x) and free port, reported as
`publicIp` and `portMappings["22"]`. A pod without those keys, or without port 22/tcp, "exits".
The start command's guardian line (`skyward.guardian.boot`) runs too, as the container would run
it, with the pod's env and the login's home. Deleting a pod stops its sshd. Knobs: `no_capacity`
({"interruptible"}, {"on-demand"}) answers RunPod's "no instances available"; `impostor_key`
boots pods with another host key; `sshd_down` boots pods whose sshd never answers.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import re
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, expect_fields
from ssh_hosts import free_port, loopback

#: RunPod's GPU types as GraphQL `gpuTypes` lists them (prices per GPU per hour).
GPU_TYPES: list[dict[str, Any]] = [
    {"id": "NVIDIA A100-SXM4-80GB", "displayName": "A100 SXM", "manufacturer": "Nvidia", "memoryInGb": 80,
     "maxGpuCount": 8, "secureCloud": True, "communityCloud": True, "securePrice": 1.89,
     "communityPrice": 1.64, "secureSpotPrice": 1.25, "communitySpotPrice": 1.05},
    {"id": "NVIDIA A100 80GB PCIe", "displayName": "A100 PCIe", "manufacturer": "Nvidia", "memoryInGb": 80,
     "maxGpuCount": 8, "secureCloud": True, "communityCloud": True, "securePrice": 1.64,
     "communityPrice": 1.19, "secureSpotPrice": 0.95, "communitySpotPrice": 0.82},
    {"id": "NVIDIA H100 80GB HBM3", "displayName": "H100 SXM", "manufacturer": "Nvidia", "memoryInGb": 80,
     "maxGpuCount": 8, "secureCloud": True, "communityCloud": True, "securePrice": 2.99,
     "communityPrice": 2.69, "secureSpotPrice": 1.99, "communitySpotPrice": 1.75},
    {"id": "NVIDIA H100 NVL", "displayName": "H100 NVL", "manufacturer": "Nvidia", "memoryInGb": 94,
     "maxGpuCount": 8, "secureCloud": True, "communityCloud": False, "securePrice": 2.79,
     "communityPrice": 0, "secureSpotPrice": 1.89, "communitySpotPrice": 0},
    {"id": "NVIDIA GeForce RTX 4090", "displayName": "RTX 4090", "manufacturer": "Nvidia", "memoryInGb": 24,
     "maxGpuCount": 8, "secureCloud": True, "communityCloud": True, "securePrice": 0.69,
     "communityPrice": 0.34, "secureSpotPrice": 0.35, "communitySpotPrice": 0.2},
    {"id": "NVIDIA L4", "displayName": "L4", "manufacturer": "Nvidia", "memoryInGb": 24, "maxGpuCount": 4,
     "secureCloud": True, "communityCloud": False, "securePrice": 0.43, "communityPrice": 0,
     "secureSpotPrice": 0, "communitySpotPrice": 0},
]

#: The body fields of "Create a new Pod" (REST v1): anything else is refused.
CREATE_FIELDS = {
    "allowedCudaVersions", "cloudType", "computeType", "containerDiskInGb", "containerRegistryAuthId",
    "countryCodes", "cpuFlavorIds", "cpuFlavorPriority", "dataCenterIds", "dataCenterPriority",
    "dockerEntrypoint", "dockerStartCmd", "env", "globalNetworking", "gpuCount", "gpuTypeIds",
    "gpuTypePriority", "imageName", "interruptible", "locked", "minDiskBandwidthMBps", "minDownloadMbps",
    "minRAMPerGPU", "minUploadMbps", "minVCPUPerGPU", "name", "networkVolumeId", "ports", "supportPublicIp",
    "templateId", "vcpuCount", "volumeInGb", "volumeMountPath",
}
NO_CAPACITY = (
    "create pod: There are no longer any instances available with the requested specifications. "
    "Please refresh and try again."
)
_addresses = itertools.count(2)
_ids = itertools.count(1)


def _check_create(body: Any) -> None:
    def strings(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)

    def whole(value: Any, low: int = 0) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= low

    expect_fields(body, CREATE_FIELDS)
    expect(isinstance(body.get("imageName"), str) and body["imageName"], "imageName is required")
    expect(body.get("cloudType", "SECURE") in ("SECURE", "COMMUNITY"), "cloudType is SECURE or COMMUNITY")
    expect(body.get("computeType", "GPU") in ("GPU", "CPU"), "computeType must be GPU or CPU")
    if body.get("computeType", "GPU") == "GPU":
        ids = body.get("gpuTypeIds")
        expect(strings(ids) and ids, "gpuTypeIds must list GPU type ids")
        known = {t["id"] for t in GPU_TYPES}
        expect(set(ids) <= known, f"unknown GPU type ids: {sorted(set(ids) - known)}")
        expect(whole(body.get("gpuCount", 1), 1), "gpuCount must be a positive integer")
    for field in ("interruptible", "supportPublicIp", "globalNetworking", "locked"):
        expect(isinstance(body.get(field, False), bool), f"{field} must be a boolean")
    for field in ("containerDiskInGb", "vcpuCount", "minRAMPerGPU", "minVCPUPerGPU", "volumeInGb"):
        if field in body:
            low = 1 if field == "containerDiskInGb" else 0
            expect(whole(body[field], low), f"{field} must be an integer of at least {low}")
    for field in ("dockerEntrypoint", "dockerStartCmd", "dataCenterIds", "gpuTypeIds", "countryCodes"):
        if field in body:
            expect(strings(body[field]), f"{field} must be a list of strings")
    env = body.get("env", {})
    expect(isinstance(env, dict) and all(isinstance(v, str) for v in env.values()), "env maps to strings")
    ports = body.get("ports", [])
    valid_ports = strings(ports) and all(re.fullmatch(r"\d+/(tcp|http)", p) for p in ports)
    expect(valid_ports, "ports are N/tcp or N/http")


@attrs.define
class FakeRunPod(FakeCloud):
    api_key: str
    pods: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: Every create body received, accepted or not, in order.
    creates: list[dict[str, Any]] = attrs.field(factory=list)
    deleted: list[str] = attrs.field(factory=list)
    no_capacity: set[str] = attrs.field(factory=set)
    impostor_key: str | None = None

    NAME: ClassVar[str] = "RunPod"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def graphql_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    # -- lifecycle ---------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes([
            web.post("/graphql", self._graphql),
            web.post("/v1/pods", self._create),
            web.get("/v1/pods", self._list),
            web.get("/v1/pods/{pod_id}", self._get),
            web.delete("/v1/pods/{pod_id}", self._delete),
        ])
        return app

    def check_nothing_left(self) -> None:
        assert not self.pods, f"pods left running: {self.live_pods()}"
        super().check_nothing_left()

    def live_pods(self) -> list[str]:
        return sorted(self.pods)

    def interrupt(self, pod_id: str) -> None:
        """RunPod takes an interruptible pod back: its container stops (its sshd and everything
        under it) and the API reports the pod `EXITED`, as it does a stopped pod."""
        pod = self.pods[pod_id]
        assert pod["interruptible"], "only an interruptible (spot) pod can be interrupted"
        pod["desiredStatus"] = "EXITED"
        pod["lastStatusChange"] = "Exited by Runpod: the interruptible pod was reclaimed"
        server = self.machines.pop(pod_id, None)  # stopped here, once: deleting the pod later finds none
        if server is not None:
            server.stop()

    # -- HTTP ----------------------------------------------------------------------------------------

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": "Unauthorized.", "status": 401}, status=401)
        return await handler(request)

    async def _graphql(self, request: web.Request) -> web.Response:
        body = await request.json()
        query = body.get("query", "") if isinstance(body, dict) else ""
        if "gpuTypes" not in query:
            return web.json_response({"errors": [{"message": "Cannot query that field"}]}, status=400)
        return web.json_response({"data": {"gpuTypes": GPU_TYPES}})

    async def _create(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": "invalid JSON", "status": 400}, status=400)
        self.creates.append(body)
        try:
            _check_create(body)
        except Invalid as exc:
            return web.json_response({"error": f"Invalid input: {exc}", "status": 400}, status=400)
        kind = "interruptible" if body.get("interruptible") else "on-demand"
        if kind in self.no_capacity:
            return web.json_response({"error": NO_CAPACITY, "status": 500}, status=500)
        pod = await asyncio.to_thread(self._boot, body)
        return web.json_response(pod, status=201)

    async def _list(self, request: web.Request) -> web.Response:
        name = request.query.get("name")
        return web.json_response([p for p in self.pods.values() if name in (None, p["name"])])

    async def _get(self, request: web.Request) -> web.Response:
        pod = self.pods.get(request.match_info["pod_id"])
        if pod is None:
            return web.json_response({"error": "pod not found", "status": 404}, status=404)
        return web.json_response(pod)

    async def _delete(self, request: web.Request) -> web.Response:
        pod_id = request.match_info["pod_id"]
        if self.pods.pop(pod_id, None) is None:
            return web.json_response({"error": "pod not found", "status": 404}, status=404)
        await self.power_off(pod_id)
        self.deleted.append(pod_id)
        return web.Response(status=204)

    # -- pods ----------------------------------------------------------------------------------------

    def _boot(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create the pod and run its "container": an sshd with the keys from its env."""
        pod_id = f"pod{next(_ids):04d}fake"
        env = body.get("env", {})
        gpu_ids = body.get("gpuTypeIds") or []
        gpu = next((t for t in GPU_TYPES if gpu_ids and t["id"] == gpu_ids[0]), None)
        count = body.get("gpuCount", 1) if gpu else 0
        interruptible = bool(body.get("interruptible", False))
        cloud = body.get("cloudType", "SECURE").lower()
        price = (gpu[f"{cloud}SpotPrice" if interruptible else f"{cloud}Price"] * count) if gpu else 0.06
        pod: dict[str, Any] = {
            "id": pod_id, "name": body.get("name", ""), "image": body["imageName"],
            "desiredStatus": "RUNNING",
            "env": env, "interruptible": interruptible, "costPerHr": f"{price:.2f}",
            "adjustedCostPerHr": round(price, 2), "gpuCount": count, "vcpuCount": 8, "memoryInGb": 62,
            "containerDiskInGb": body.get("containerDiskInGb", 50), "ports": body.get("ports", []),
            "dockerEntrypoint": body.get("dockerEntrypoint", []),
            "dockerStartCmd": body.get("dockerStartCmd", []),
            "machineId": f"machine-{pod_id}", "publicIp": None, "portMappings": {},
            "gpu": {"id": gpu["id"], "count": count, "displayName": gpu["displayName"]} if gpu else None,
        }
        self.pods[pod_id] = pod
        host_key_b64, login_key = env.get("SKYWARD_SSH_HOST_KEY"), env.get("PUBLIC_KEY")
        if not host_key_b64 or not login_key:
            pod["desiredStatus"] = "EXITED"  # the start command found no keys and the container exited
            return pod
        host_key = self.impostor_key or base64.b64decode(host_key_b64).decode()
        address = loopback(1, next(_addresses))
        server = self.boot_machine(pod_id, address, free_port(address), host_key, login_key)
        # The start command keeps the pod's own key in the login's home (`pods.IDENTITY_FILE`); the
        # fake's pods use the account's key, the only one it knows.
        identity = server.home / ".skyward-runpod.env"
        identity.write_text(f"RUNPOD_API_KEY={self.api_key}\n")
        identity.chmod(0o600)
        # The start command's guardian line, as the container runs it: with the pod's env
        # (`RUNPOD_POD_ID`, `$SKYWARD_GUARDIAN`) and the login's home; the key is kept above.
        start = "\n".join(body.get("dockerStartCmd", []))
        self.run_boot_lines(pod_id, server, start, {**env, "RUNPOD_POD_ID": pod_id}, credentials=False)
        if "22/tcp" in pod["ports"]:
            pod["publicIp"], pod["portMappings"] = address, {"22": server.port}
        return pod
