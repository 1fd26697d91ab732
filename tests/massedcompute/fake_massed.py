"""A Massed Compute VM API on loopback whose machines are real OpenSSH servers.

It answers, under `/api/v1` and only with the bearer key, the calls the provider makes (see
skyward_massedcompute/api.py for which shapes Massed Compute documents and which are modelled):
`GET /gpu-inventory`, `GET /images`, `GET /instance`, `GET /instance/{uuid}`,
`POST /instance/launch` (answers `{"response": <uuid>}`) and `POST /instance/terminate` with
`{"instanceUuids": [...]}`. A deploy body is checked field by field: unknown fields, an unknown
product, image or region, or no SSH key are refused with 400.

A deployed machine boots for real: the fake reads the host key from its startup command's
`export SKYWARD_SSH_HOST_KEY=...` and the login key from `sshKey`, starts an sshd
(`ssh_hosts.start_machine`) on a loopback address of its own at `ssh_port`, and runs the command's
key line and guardian line as the machine would, with the login's home. Knobs: `no_capacity`
(product or region names) refuses a deploy there as sold out; `sshd_down` boots machines whose
sshd never answers; `terminate_errors` fails that many terminate calls with a 500;
`impostor_key` boots machines with another host key.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import shlex
import uuid
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, expect_fields
from ssh_hosts import free_port, loopback


def _product(
    name: str, description: str, cents: int, vcpus: int, ram: int, regions: tuple[str, ...], capacity: int = 4
) -> tuple[str, dict[str, Any]]:
    return name, {
        "instance_type": {
            "name": name,
            "description": description,
            "price_cents_per_hour": cents,
            "specs": {"vcpu_count": vcpus, "memory_gib": ram, "storage_gb": 256},
        },
        "regions_with_capacity_available": [{"name": r, "description": r.upper()} for r in regions],
        "capacity_available": capacity,
    }


#: Massed Compute's inventory as `GET /gpu-inventory` lists it (prices per machine per hour).
INVENTORY: dict[str, dict[str, Any]] = dict(
    [
        _product("gpu_1x_a6000", "1x RTX A6000 (48 GB)", 62, 6, 48, ("us-central-2", "us-central-3")),
        _product("gpu_1x_l40", "1x L40 (48 GB)", 99, 12, 64, ("us-central-3",)),
        _product("gpu_2x_l40", "2x L40 (48 GB)", 198, 24, 128, ("us-central-3",)),
        _product("gpu_1x_l40s", "1x L40S (48 GB)", 110, 12, 64, ("us-central-3",)),
        _product("gpu_1x_h100_sxm5", "1x H100 SXM5 (80 GB)", 235, 20, 128, ("us-central-2",)),
        _product("gpu_1x_a100_sxm4", "1x A100 SXM4 (80 GB)", 125, 16, 96, (), capacity=0),
    ]
)
IMAGES = [
    {"id": 7, "name": "Art", "description": "Tools for artists"},
    {"id": 84, "name": "Ubuntu 22.04 (drivers)", "description": "Base OS with NVIDIA drivers"},
]
LAUNCH_FIELDS = {"imageId", "productName", "regionName", "instanceName", "coupon", "command", "sshKey"}
_addresses = itertools.count(2)


@attrs.define
class FakeMassed(FakeCloud):
    api_key: str
    ssh_port: int = 0
    instances: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: Every deploy body received, accepted or not, in order.
    launches: list[dict[str, Any]] = attrs.field(factory=list)
    terminated: list[str] = attrs.field(factory=list)
    no_capacity: set[str] = attrs.field(factory=set)
    terminate_errors: int = 0
    impostor_key: str | None = None

    NAME: ClassVar[str] = "MassedCompute"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def start(self) -> FakeMassed:
        self.ssh_port = free_port("127.0.0.1")
        return super().start()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes(
            [
                web.get("/api/v1/gpu-inventory", self._inventory),
                web.get("/api/v1/images", self._images),
                web.get("/api/v1/instance", self._all),
                web.get("/api/v1/instance/{uuid}", self._get),
                web.post("/api/v1/instance/launch", self._launch),
                web.post("/api/v1/instance/terminate", self._terminate),
            ]
        )
        return app

    def check_nothing_left(self) -> None:
        assert not self.instances, f"machines left running: {sorted(self.instances)}"
        super().check_nothing_left()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": "Unauthorized: invalid API token"}, status=401)
        return await handler(request)

    async def _inventory(self, request: web.Request) -> web.Response:
        return web.json_response({"gpu_inventory": INVENTORY})

    async def _images(self, request: web.Request) -> web.Response:
        return web.json_response({"images": IMAGES})

    async def _all(self, request: web.Request) -> web.Response:
        return web.json_response({"runningInstances": list(self.instances.values())})

    async def _get(self, request: web.Request) -> web.Response:
        row = self.instances.get(request.match_info["uuid"])
        if row is None:
            return web.json_response({"error": "Instance not found"}, status=404)
        return web.json_response({"runningInstance": row})

    def _check(self, body: Any) -> None:
        expect_fields(body, LAUNCH_FIELDS)
        product = INVENTORY.get(body.get("productName"))
        expect(product is not None, f"unknown product {body.get('productName')!r}")
        assert product is not None
        regions = {r["name"] for r in product["regions_with_capacity_available"]}
        expect(body.get("regionName") in {"any", *regions}, f"unknown region {body.get('regionName')!r}")
        expect(body.get("imageId") in {i["id"] for i in IMAGES}, f"unknown image {body.get('imageId')!r}")
        keys = body.get("sshKey")
        expect(
            isinstance(keys, list) and keys and all(isinstance(k, str) for k in keys), "sshKey is required"
        )
        expect(isinstance(body.get("command", ""), str), "command must be a string")

    async def _launch(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.launches.append(body)
        try:
            self._check(body)
        except Invalid as exc:
            return web.json_response({"error": str(exc)}, status=400)
        product = INVENTORY[body["productName"]]
        where = {body["productName"], body["regionName"]}
        if where & self.no_capacity or not product["capacity_available"]:
            return web.json_response(
                {"error": f"No capacity available for {body['productName']}"}, status=400
            )
        instance_uuid = await asyncio.to_thread(self._boot, body)
        return web.json_response({"response": instance_uuid})

    async def _terminate(self, request: web.Request) -> web.Response:
        body = await request.json()
        uuids = body.get("instanceUuids") if isinstance(body, dict) else None
        if not isinstance(uuids, list) or not uuids:
            return web.json_response({"error": "instanceUuids is required"}, status=400)
        if self.terminate_errors > 0:
            self.terminate_errors -= 1
            return web.json_response({"error": "Internal server error"}, status=500)
        known = [u for u in uuids if u in self.instances]
        if not known:
            return web.json_response({"error": "Instance not found"}, status=404)
        for instance_uuid in known:
            del self.instances[instance_uuid]
            await self.power_off(instance_uuid)
            self.terminated.append(instance_uuid)
        return web.json_response({"response": "terminated"})

    def _boot(self, body: dict[str, Any]) -> str:
        instance_uuid = str(uuid.uuid4())
        address = loopback(11, next(_addresses))
        product = INVENTORY[body["productName"]]
        command = body.get("command", "")
        self.instances[instance_uuid] = {
            "uuid": instance_uuid,
            "name": body.get("instanceName", ""),
            "ip": address,
            "username": "Ubuntu",
            "password": "123456",
            "status": "rented",
            "os_booted": 1,
            "command_startup": command,
            "created": "2026-11-29T10:00:00.000Z",
            "active": 1,
            "image": next(i for i in IMAGES if i["id"] == body["imageId"]),
            "product_name": body["productName"],
            "region": body["regionName"],
            "price_cents_per_hour": product["instance_type"]["price_cents_per_hour"],
        }
        host_key = self.impostor_key or _host_key(command)
        if host_key is None:
            self.instances[instance_uuid]["status"] = "failed"  # the command found no key and failed
            return instance_uuid
        server = self.boot_machine(instance_uuid, address, self.ssh_port, host_key, body["sshKey"][0])
        # The command's key line and guardian line, as the machine runs them (as root; here as this
        # user, with the login's home).
        self.run_boot_lines(instance_uuid, server, command, {})
        return instance_uuid


def _host_key(command: str) -> str | None:
    """The private host key the command exports (base64), as the machine would install it."""
    for line in command.splitlines():
        if line.startswith("export SKYWARD_SSH_HOST_KEY="):
            (assignment,) = shlex.split(line.removeprefix("export "))
            return base64.b64decode(assignment.split("=", 1)[1]).decode()
    return None
