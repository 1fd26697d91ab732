"""A Verda API on loopback whose VMs are real OpenSSH servers.

It answers the calls the provider makes, as Verda documents them (and its SDK `verda` sends
them), under `/v1`: `POST /oauth2/token` (client-credentials grant; every other call needs the
bearer token it hands out), `GET /instance-types`, `GET /instance-availability?isSpot=`,
`POST|GET /sshkeys`, `DELETE /sshkeys/{id}`, `POST|GET /scripts`, `DELETE /scripts/{id}`,
`POST /instances` (answers the new id as text), `GET /instances`, `GET /instances/{id}` and
`PUT /instances` with `{"id": [...], "action": "delete"}`. A deploy request is checked field by
field (unknown fields, unknown types, keys or scripts are refused with 400).

A deployed VM boots for real: the fake reads the host key from its startup script's
`export SKYWARD_SSH_HOST_KEY=...` and the login key from its registered SSH key, starts an sshd
(`ssh_hosts.start_machine`) on a loopback address of its own (127.0.3.x) at `ssh_port`, and runs
the script's credentials line and guardian line as the VM would, with the login's home. Knobs:
`no_capacity` (instance type names, or "spot" / "on-demand") answers Verda's 503;
`sshd_down` boots VMs whose sshd never answers; `delete_errors` fails that many delete calls
with a 500; `impostor_key` boots VMs with another host key.
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


def _type(name: str, model: str, title: str, gpus: int, gpu_gb: int, vcpus: int, ram: int,
          price: float, spot: float) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)), "instance_type": name, "model": model, "name": title,
        "price_per_hour": f"{price:.2f}", "spot_price": f"{spot:.2f}", "description": title,
        "cpu": {"description": f"{vcpus} CPU", "number_of_cores": vcpus},
        "gpu": {"description": f"{gpus}x {title}" if gpus else "", "number_of_gpus": gpus},
        "memory": {"description": f"{ram}GB RAM", "size_in_gigabytes": ram},
        "gpu_memory": {"description": f"{gpu_gb * gpus}GB GPU RAM", "size_in_gigabytes": gpu_gb * gpus},
        "storage": {"description": "dynamic"}, "best_for": [], "p2p": "", "currency": "usd",
        "manufacturer": "NVIDIA" if gpus else "AMD", "display_name": title, "supported_os": [],
    }


#: Verda's instance types as `GET /instance-types` lists them (prices per instance per hour).
INSTANCE_TYPES: list[dict[str, Any]] = [
    _type("1A100.22V", "A100", "A100 SXM4 80GB", 1, 80, 22, 120, 1.29, 0.45),
    _type("2A100.44V", "A100", "A100 SXM4 80GB", 2, 80, 44, 240, 2.58, 0.90),
    _type("1A100.40S.22V", "A100", "A100 SXM4 40GB", 1, 40, 22, 120, 0.99, 0.35),
    _type("1H100.80S.30V", "H100", "H100 SXM5 80GB", 1, 80, 30, 120, 2.19, 0.85),
    _type("1V100.6V", "V100", "Tesla V100 16GB", 1, 16, 6, 23, 0.39, 0.14),
    _type("CPU.4V.16G", "", "CPU Node", 0, 0, 4, 16, 0.03, 0.01),
]
LOCATIONS = ("FIN-01", "FIN-03")
CREATE_FIELDS = {
    "instance_type", "image", "ssh_key_ids", "startup_script_id", "hostname", "description", "location_code",
    "os_volume", "volumes", "existing_volumes", "is_spot", "coupon", "contract", "pricing",
}
NO_CAPACITY = {
    "code": "server_error", "message": "Not enough resources available for the requested instance type",
}
_addresses = itertools.count(2)


@attrs.define
class FakeVerda(FakeCloud):
    client_id: str
    client_secret: str
    ssh_port: int = 0
    instances: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    ssh_keys: dict[str, dict[str, str]] = attrs.field(factory=dict)
    scripts: dict[str, dict[str, str]] = attrs.field(factory=dict)
    #: Every deploy body received, accepted or not, in order.
    creates: list[dict[str, Any]] = attrs.field(factory=list)
    deleted: list[str] = attrs.field(factory=list)
    no_capacity: set[str] = attrs.field(factory=set)
    #: Instance types (or "spot" / "on-demand") the availability listing leaves out.
    unlisted: set[str] = attrs.field(factory=set)
    delete_errors: int = 0
    impostor_key: str | None = None
    tokens: set[str] = attrs.field(factory=set)

    NAME: ClassVar[str] = "Verda"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def live(self) -> list[str]:
        return sorted(self.instances)

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> FakeVerda:
        self.ssh_port = free_port("127.0.0.1")
        return super().start()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes([
            web.post("/v1/oauth2/token", self._token),
            web.get("/v1/instance-types", self._types),
            web.get("/v1/instance-availability", self._availability),
            web.post("/v1/sshkeys", self._add("ssh_keys", "key")),
            web.get("/v1/sshkeys", self._list("ssh_keys")),
            web.delete("/v1/sshkeys/{id}", self._remove("ssh_keys")),
            web.post("/v1/scripts", self._add("scripts", "script")),
            web.get("/v1/scripts", self._list("scripts")),
            web.delete("/v1/scripts/{id}", self._remove("scripts")),
            web.post("/v1/instances", self._create),
            web.get("/v1/instances", self._all),
            web.get("/v1/instances/{id}", self._get),
            web.put("/v1/instances", self._action),
        ])
        return app

    def check_nothing_left(self) -> None:
        assert not self.instances, f"VMs left running: {self.live()}"
        assert not self.scripts and not self.ssh_keys, "startup scripts or SSH keys left behind"
        super().check_nothing_left()

    # -- auth --------------------------------------------------------------------------------------

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path != "/v1/oauth2/token":
            token = request.headers.get("Authorization", "").removeprefix("Bearer ")
            if token not in self.tokens:
                refused = {"code": "unauthorized_request", "message": "Invalid token"}
                return web.json_response(refused, status=401)
        return await handler(request)

    async def _token(self, request: web.Request) -> web.Response:
        body = await request.json()
        if (
            body.get("grant_type") != "client_credentials" or body.get("client_id") != self.client_id
            or body.get("client_secret") != self.client_secret
        ):
            return web.json_response(
                {"code": "unauthorized_request", "message": "Invalid client credentials"}, status=401
            )
        token = uuid.uuid4().hex
        self.tokens.add(token)
        return web.json_response({
            "access_token": token, "refresh_token": uuid.uuid4().hex, "scope": "cloud-api-v1",
            "token_type": "Bearer", "expires_in": 3600,
        })

    # -- catalog, keys, scripts --------------------------------------------------------------------

    async def _types(self, request: web.Request) -> web.Response:
        return web.json_response(INSTANCE_TYPES)

    async def _all(self, request: web.Request) -> web.Response:
        return web.json_response(list(self.instances.values()))

    async def _availability(self, request: web.Request) -> web.Response:
        kind = "spot" if request.query.get("isSpot", "false") == "true" else "on-demand"
        names = [t["instance_type"] for t in INSTANCE_TYPES if not {kind, t["instance_type"]} & self.unlisted]
        return web.json_response([{"location_code": loc, "availabilities": names} for loc in LOCATIONS])

    def _add(self, store: str, field: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            body = await request.json()
            if not isinstance(body.get("name"), str) or not isinstance(body.get(field), str):
                invalid = {"code": "invalid_request", "message": f"name and {field} are required"}
                return web.json_response(invalid, status=400)
            new_id = str(uuid.uuid4())
            getattr(self, store)[new_id] = {"id": new_id, "name": body["name"], field: body[field]}
            return web.Response(text=new_id, status=201)

        return handler

    def _list(self, store: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            return web.json_response(list(getattr(self, store).values()))

        return handler

    def _remove(self, store: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            if getattr(self, store).pop(request.match_info["id"], None) is None:
                return web.json_response({"code": "not_found", "message": "not found"}, status=404)
            return web.Response(status=200)

        return handler

    # -- instances ---------------------------------------------------------------------------------

    def _check(self, body: Any) -> dict[str, Any]:
        expect_fields(body, CREATE_FIELDS)
        kind = next((t for t in INSTANCE_TYPES if t["instance_type"] == body.get("instance_type")), None)
        expect(kind is not None, f"unknown instance type {body.get('instance_type')!r}")
        expect(isinstance(body.get("image"), str) and body["image"], "image is required")
        expect(isinstance(body.get("hostname"), str) and body["hostname"], "hostname is required")
        expect(body.get("location_code") in LOCATIONS, f"unknown location {body.get('location_code')!r}")
        expect(isinstance(body.get("is_spot", False), bool), "is_spot must be a boolean")
        keys = body.get("ssh_key_ids")
        expect(isinstance(keys, list) and keys and set(keys) <= set(self.ssh_keys), "unknown ssh_key_ids")
        script = body.get("startup_script_id")
        expect(script is None or script in self.scripts, f"unknown startup script {script!r}")
        volume = body.get("os_volume")
        sized = isinstance(volume, dict) and isinstance(volume.get("size"), int)
        expect(volume is None or sized, "os_volume needs a size in GB")
        return kind  # type: ignore[return-value]

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.creates.append(body)
        try:
            kind = self._check(body)
        except Invalid as exc:
            return web.json_response({"code": "invalid_request", "message": str(exc)}, status=400)
        spot = "spot" if body.get("is_spot") else "on-demand"
        if {spot, body["instance_type"]} & self.no_capacity:
            return web.json_response(NO_CAPACITY, status=503)
        instance_id = await asyncio.to_thread(self._boot, body, kind)
        return web.Response(text=instance_id, status=202)

    async def _get(self, request: web.Request) -> web.Response:
        row = self.instances.get(request.match_info["id"])
        if row is None:
            return web.json_response({"code": "not_found", "message": "Instance not found"}, status=404)
        return web.json_response(row)

    async def _action(self, request: web.Request) -> web.Response:
        body = await request.json()
        ids = body.get("id")
        ids = [ids] if isinstance(ids, str) else ids
        if body.get("action") != "delete" or not isinstance(ids, list):
            return web.json_response({"code": "invalid_request", "message": "unsupported action"}, status=400)
        if self.delete_errors > 0:
            self.delete_errors -= 1
            return web.json_response({"code": "server_error", "message": "Internal server error"}, status=500)
        known = [i for i in ids if i in self.instances]
        if not known:
            return web.json_response({"code": "not_found", "message": "Instance not found"}, status=404)
        for instance_id in known:
            del self.instances[instance_id]
            await self.power_off(instance_id)
            self.deleted.append(instance_id)
        return web.Response(status=202)

    # -- VMs ---------------------------------------------------------------------------------------

    def _boot(self, body: dict[str, Any], kind: dict[str, Any]) -> str:
        instance_id = str(uuid.uuid4())
        address = loopback(3, next(_addresses))
        spot = bool(body.get("is_spot"))
        self.instances[instance_id] = {
            "id": instance_id, "instance_type": body["instance_type"], "hostname": body["hostname"],
            "description": body.get("description", ""), "status": "running",
            "created_at": "2026-01-01T00:00:00Z",
            "ssh_key_ids": body["ssh_key_ids"], "ip": address, "location": body["location_code"],
            "image": body["image"], "startup_script_id": body.get("startup_script_id"), "is_spot": spot,
            "price_per_hour": float(kind["spot_price" if spot else "price_per_hour"]),
            "cpu": kind["cpu"], "gpu": kind["gpu"], "memory": kind["memory"],
            "gpu_memory": kind["gpu_memory"],
            "storage": kind["storage"], "os_volume_id": str(uuid.uuid4()),
        }
        script = self.scripts.get(body.get("startup_script_id") or "", {}).get("script", "")
        host_key = self.impostor_key or _host_key(script)
        if host_key is None:
            self.instances[instance_id]["status"] = "error"  # the script found no key and failed
            return instance_id
        login_key = self.ssh_keys[body["ssh_key_ids"][0]]["key"]
        server = self.boot_machine(instance_id, address, self.ssh_port, host_key, login_key)
        # The script's credentials line and guardian line, as the VM runs them (as root; here as
        # this user, with the login's home).
        self.run_boot_lines(instance_id, server, script, {})
        return instance_id


def _host_key(script: str) -> str | None:
    """The private host key the script exports (base64), as the VM would install it."""
    for line in script.splitlines():
        if line.startswith("export SKYWARD_SSH_HOST_KEY="):
            (assignment,) = shlex.split(line.removeprefix("export "))
            return base64.b64decode(assignment.split("=", 1)[1]).decode()
    return None
