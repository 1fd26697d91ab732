"""A Novita GPU instance API on loopback whose instances are real OpenSSH servers.

It answers the calls the provider makes, as Novita documents them, under
`/gpu-instance/openapi/v1`, behind `Authorization: Bearer <key>`: `GET /products` (`gpuNum`,
`billingMethod`), `POST /gpu/instance/create`, `GET /gpu/instance?instanceId=`,
`GET /gpu/instances` (paged, `name` filter) and `POST /gpu/instance/delete`. A create request is
checked field by field (unknown fields, unknown products, ports other than "22/tcp" are refused).

A created instance boots for real: the fake reads `SKYWARD_SSH_HOST_KEY` and `PUBLIC_KEY` from its
envs, as the start script would, starts an sshd (`ssh_hosts.start_machine`) on a loopback address
of its own (127.0.4.x) and free port, reported in `portMappings` for port 22, and runs the start
script's key line and guardian line (the script decoded from its `SKYWARD_BOOT_<i>` chunks) with
the instance's envs and the login's home. Knobs: `no_capacity` (product names, or "spot" /
"onDemand") answers Novita's "insufficient resources"; `sshd_down` boots instances whose sshd
never answers; `delete_errors` fails that many delete calls with a 500.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import uuid
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, expect_fields
from ssh_hosts import free_port, loopback

PREFIX = "/gpu-instance/openapi/v1"
#: Novita's products as `GET /products` lists them (prices per GPU per hour, in 1/100000 USD).
PRODUCTS: list[dict[str, Any]] = [
    {"id": "prod-4090-a", "name": "RTX 4090 24GB", "cpuPerGpu": 16, "memoryPerGpu": 62, "diskPerGpu": 100,
     "availableDeploy": True, "price": 35000, "spotPrice": "18000", "billingMethods": ["onDemand", "spot"],
     "minRootFS": 10, "maxRootFS": 500, "regions": ["us-east"]},
    {"id": "prod-4090-b", "name": "RTX 4090 24GB", "cpuPerGpu": 12, "memoryPerGpu": 48, "diskPerGpu": 80,
     "availableDeploy": True, "price": 39000, "spotPrice": "21000", "billingMethods": ["onDemand", "spot"],
     "minRootFS": 10, "maxRootFS": 500, "regions": ["eu-west"]},
    {"id": "prod-a100", "name": "A100 SXM 80GB", "cpuPerGpu": 16, "memoryPerGpu": 100, "diskPerGpu": 200,
     "availableDeploy": True, "price": 140000, "spotPrice": "", "billingMethods": ["onDemand"],
     "minRootFS": 10, "maxRootFS": 1000, "regions": ["us-east"]},
]
CREATE_FIELDS = {
    "name", "productId", "gpuNum", "rootfsSize", "imageUrl", "imageAuth", "imageAuthId", "ports", "envs",
    "tools", "command", "entrypoint", "clusterId", "networkStorages", "networkId", "kind", "month",
    "billingMode",
}
NO_CAPACITY = "The GPU resources are insufficient, please try again later"
_addresses = itertools.count(2)


@attrs.define
class FakeNovita(FakeCloud):
    api_key: str
    instances: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    creates: list[dict[str, Any]] = attrs.field(factory=list)
    deleted: list[str] = attrs.field(factory=list)
    #: The start script each instance ran, decoded from its envs, by instance id.
    scripts: dict[str, str] = attrs.field(factory=dict)
    no_capacity: set[str] = attrs.field(factory=set)
    delete_errors: int = 0

    NAME: ClassVar[str] = "Novita"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PREFIX}"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes([
            web.get(f"{PREFIX}/products", self._products),
            web.post(f"{PREFIX}/gpu/instance/create", self._create),
            web.get(f"{PREFIX}/gpu/instance", self._get),
            web.get(f"{PREFIX}/gpu/instances", self._list),
            web.post(f"{PREFIX}/gpu/instance/delete", self._delete),
        ])
        return app

    def check_nothing_left(self) -> None:
        assert not self.instances, f"instances left running: {sorted(self.instances)}"
        super().check_nothing_left()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"code": 401, "reason": "UNAUTHORIZED", "message": "invalid api key"},
                                     status=401)
        return await handler(request)

    async def _products(self, request: web.Request) -> web.Response:
        method = request.query.get("billingMethod", "onDemand")
        return web.json_response({"data": [p for p in PRODUCTS if method in p["billingMethods"]]})

    def _check(self, body: Any) -> dict[str, Any]:
        expect_fields(body, CREATE_FIELDS)
        product = next((p for p in PRODUCTS if p["id"] == body.get("productId")), None)
        expect(product is not None, f"unknown product {body.get('productId')!r}")
        expect(isinstance(body.get("gpuNum"), int) and 1 <= body["gpuNum"] <= 8, "gpuNum in [1, 8]")
        expect(isinstance(body.get("rootfsSize"), int) and body["rootfsSize"] >= 10, "rootfsSize >= 10")
        expect(isinstance(body.get("imageUrl"), str) and 0 < len(body["imageUrl"]) <= 500, "imageUrl")
        expect(body.get("ports") == "22/tcp", "ports")
        expect(len(body.get("command", "")) <= 2047, "command is at most 2047 characters")
        envs = body.get("envs", [])
        expect(isinstance(envs, list) and len(envs) <= 100, "at most 100 envs")
        expect(all(isinstance(e.get("key"), str) and isinstance(e.get("value"), str)
                   and len(e["value"]) <= 2048 for e in envs), "env values are strings of at most 2048")
        expect(body.get("billingMode", "onDemand") in ("onDemand", "spot", "monthly"), "billingMode")
        expect(body.get("kind", "gpu") in ("gpu", "cpu"), "kind")
        return product  # type: ignore[return-value]

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.creates.append(body)
        try:
            product = self._check(body)
        except Invalid as exc:
            invalid = {"code": 400, "reason": "INVALID_ARGUMENT", "message": str(exc)}
            return web.json_response(invalid, status=400)
        if {body.get("billingMode", "onDemand"), product["id"]} & self.no_capacity:
            return web.json_response({"code": 400, "reason": "RESOURCE_EXHAUSTED", "message": NO_CAPACITY},
                                     status=400)
        instance_id = await asyncio.to_thread(self._boot, body, product)
        return web.json_response({"id": instance_id})

    async def _get(self, request: web.Request) -> web.Response:
        row = self.instances.get(request.query.get("instanceId", ""))
        if row is None:
            return web.json_response({"code": 404, "reason": "NOT_FOUND", "message": "instance not found"},
                                     status=404)
        return web.json_response(row)

    async def _list(self, request: web.Request) -> web.Response:
        name = request.query.get("name")
        rows = [r for r in self.instances.values() if name in (None, r["name"])]
        size, page = int(request.query.get("pageSize", 10)), int(request.query.get("pageNumber", 1))
        chosen = rows[(page - 1) * size : page * size]
        return web.json_response({"instances": chosen, "pageSize": size, "pageNum": page, "total": len(rows)})

    async def _delete(self, request: web.Request) -> web.Response:
        instance_id = (await request.json()).get("instanceId")
        if self.delete_errors > 0:
            self.delete_errors -= 1
            failure = {"code": 500, "reason": "INTERNAL", "message": "internal error"}
            return web.json_response(failure, status=500)
        if self.instances.pop(instance_id, None) is None:
            return web.json_response({"code": 404, "reason": "NOT_FOUND", "message": "instance not found"},
                                     status=404)
        await self.power_off(instance_id)
        self.deleted.append(instance_id)
        return web.json_response({})

    def _boot(self, body: dict[str, Any], product: dict[str, Any]) -> str:
        instance_id = uuid.uuid4().hex[:16]
        env = {e["key"]: e["value"] for e in body.get("envs", [])}
        address = loopback(4, next(_addresses))
        row: dict[str, Any] = {
            "id": instance_id, "name": body.get("name", ""), "status": "running",
            "imageUrl": body["imageUrl"],
            "command": body.get("command", ""), "gpuNum": str(body["gpuNum"]), "productName": product["name"],
            "clusterName": product["regions"][0], "billingMode": body.get("billingMode", "onDemand"),
            "envs": body.get("envs", []), "portMappings": [], "kind": body.get("kind", "gpu"),
            "createdAt": "2026-01-01T00:00:00Z",
        }
        self.instances[instance_id] = row
        host_key_b64, login_key = env.get("SKYWARD_SSH_HOST_KEY"), env.get("PUBLIC_KEY")
        boot = (k for k in env if k.startswith("SKYWARD_BOOT_"))
        chunks = sorted(boot, key=lambda k: int(k.rsplit("_", 1)[1]))
        if not host_key_b64 or not login_key or not chunks or not all(c in row["command"] for c in chunks):
            row["status"] = "exited"  # the start command found nothing to run
            return instance_id
        script = base64.b64decode("".join(env[c] for c in chunks)).decode()
        self.scripts[instance_id] = script
        port = free_port(address)
        host_key = base64.b64decode(host_key_b64).decode()
        server = self.boot_machine(instance_id, address, port, host_key, login_key)
        self.run_boot_lines(instance_id, server, script, env)
        row["portMappings"] = [{"port": 22, "endpoint": f"{address}:{port}", "type": "tcp"}]
        return instance_id
