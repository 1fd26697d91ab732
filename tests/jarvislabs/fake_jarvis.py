"""A JarvisLabs API on loopback whose instances are real OpenSSH servers.

It answers, only with the bearer key, the calls the provider makes, in the shapes JarvisLabs' SDK
shows (skyward_jarvislabs/api.py says which are shown and which modelled): `GET /misc/server_meta`,
`GET /users/fetch`, `GET /users/fetch/{machine_id}`, `POST /templates/{template}/create`,
`POST /misc/destroy?machine_id=`, `POST /scripts/add?name=` (multipart `script`), `GET /scripts/`
and `DELETE /scripts/?script_id=`. One server stands in for every region's backend. A create body
is checked field by field: unknown or missing fields, an unknown GPU type, region, GPU count or
script are refused with 422 as a FastAPI backend does.

A created instance boots for real: the fake reads the host key and the login key from its
startup script (the `SKYWARD_SSH_HOST_KEY` export and the `authorized_keys` line), starts an sshd
(`ssh_hosts.start_machine`) on a loopback address and port of its own, which its `ssh_str` gives
("ssh -p <port> <user>@<address>", the user the sshd lets in), and runs the script's key line
and guardian line as the instance would, with the login's home. Knobs: `no_capacity` (GPU types
or regions) refuses a create there with JarvisLabs' "no free GPUs" words; `sshd_down` boots
instances whose sshd never answers; `destroy_errors` fails that many destroy calls with a 500;
`booting_reads` shows each new instance "Creating", without an SSH command, for that many reads.
"""

from __future__ import annotations

import asyncio
import getpass
import itertools
import re
import shlex
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, expect_fields, exported_host_key
from ssh_hosts import free_port, loopback


def _gpu(
    gpu: str, region: str, price: float, spot: float | None, vram: str, cpus: int, ram: int, free: int = 8
) -> dict[str, Any]:
    return {
        "gpu_type": gpu,
        "region": region,
        "num_free_devices": free,
        "effective_num_free_devices": free,
        "spot_num_free_devices": free if spot else 0,
        "price_per_hour": price,
        "spot_price": spot,
        "vram": vram,
        "arc": "Ampere",
        "cpus_per_gpu": cpus,
        "ram_per_gpu": ram,
        "workload_type": "container",
    }


#: JarvisLabs' GPU listing as `GET /misc/server_meta` gives it (prices per GPU per hour).
SERVER_META: list[dict[str, Any]] = [
    _gpu("A100", "india-noida-01", 0.79, 0.39, "40GB", 7, 32),
    _gpu("A100-80GB", "india-noida-01", 1.29, 0.69, "80GB", 7, 64),
    _gpu("A100-80GB", "india-chennai-01", 1.39, None, "80GB", 7, 64),
    _gpu("RTX6000Ada", "india-noida-01", 0.99, 0.49, "48GB", 7, 48),
    _gpu("H100", "europe-01", 2.69, None, "80GB", 16, 128, free=1),
    _gpu("L4", "india-noida-01", 0.44, None, "24GB", 4, 16, free=0),
]
CREATE_FIELDS = {
    "gpu_type",
    "num_gpus",
    "hdd",
    "region",
    "name",
    "is_spot",
    "duration",
    "disk_type",
    "http_ports",
    "script_id",
    "script_args",
    "fs_id",
    "arguments",
}
_addresses = itertools.count(2)
_LOGIN_KEY = re.compile(r"printf '%s\\n' ('[^']*') >> \S*authorized_keys")


def login_key(script: str) -> str | None:
    """The public key a startup script authorises for root."""
    found = _LOGIN_KEY.search(script)
    return shlex.split(found.group(1))[0] if found else None


@attrs.define
class FakeJarvis(FakeCloud):
    api_key: str
    instances: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    scripts: dict[str, dict[str, str]] = attrs.field(factory=dict)
    #: Every create body received, accepted or not, in order.
    launches: list[dict[str, Any]] = attrs.field(factory=list)
    destroyed: list[str] = attrs.field(factory=list)
    no_capacity: set[str] = attrs.field(factory=set)
    destroy_errors: int = 0
    #: Reads of a new instance that show it "Creating", without an SSH command, before it runs.
    booting_reads: int = 0
    #: Each instance's "Creating" reads still to show.
    booting: dict[str, int] = attrs.field(factory=dict)
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(301001))

    NAME: ClassVar[str] = "JarvisLabs"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes(
            [
                web.get("/misc/server_meta", self._server_meta),
                web.get("/users/fetch", self._all),
                web.get("/users/fetch/{machine_id}", self._get),
                web.post("/templates/{template}/create", self._create),
                web.post("/misc/destroy", self._destroy),
                web.post("/scripts/add", self._add_script),
                web.get("/scripts/", self._scripts),
                web.delete("/scripts/", self._delete_script),
            ]
        )
        return app

    def check_nothing_left(self) -> None:
        assert not self.instances, f"instances left: {sorted(self.instances)}"
        assert not self.scripts, f"startup scripts left (they hold the key): {sorted(self.scripts)}"
        super().check_nothing_left()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"detail": "Invalid or expired token"}, status=401)
        return await handler(request)

    async def _server_meta(self, request: web.Request) -> web.Response:
        return web.json_response({"server_meta": SERVER_META, "cpu_meta": {}})

    async def _all(self, request: web.Request) -> web.Response:
        return web.json_response({"success": True, "instances": list(self.instances.values())})

    async def _get(self, request: web.Request) -> web.Response:
        machine_id = request.match_info["machine_id"]
        row = self.instances.get(machine_id)
        if row is None:
            return web.json_response({"success": False, "message": "Instance not found"}, status=404)
        if self.booting.get(machine_id, 0) > 0:
            self.booting[machine_id] -= 1
            row = {**row, "status": "Creating", "ssh_str": None}
        return web.json_response({"success": True, "instance": row})

    async def _add_script(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("script")
        if upload is None or not hasattr(upload, "file"):
            return web.json_response({"detail": "script file is required"}, status=422)
        script_id = str(next(self._ids))
        name = request.query.get("name", "")
        self.scripts[script_id] = {"name": name, "text": upload.file.read().decode()}
        return web.json_response({"success": True})

    async def _scripts(self, request: web.Request) -> web.Response:
        meta = [{"script_id": int(i), "script_name": s["name"]} for i, s in self.scripts.items()]
        return web.json_response({"success": True, "script_meta": meta})

    async def _delete_script(self, request: web.Request) -> web.Response:
        if self.scripts.pop(request.query.get("script_id", ""), None) is None:
            return web.json_response({"success": False, "message": "Script not found"}, status=404)
        return web.json_response({"success": True})

    def _check(self, body: Any) -> dict[str, Any]:
        expect_fields(body, CREATE_FIELDS)
        expect(set(body) == CREATE_FIELDS, f"missing fields: {sorted(CREATE_FIELDS - set(body))}")
        row = next(
            (r for r in SERVER_META if (r["gpu_type"], r["region"]) == (body["gpu_type"], body["region"])),
            None,
        )
        expect(row is not None, f"no {body['gpu_type']} in {body['region']}")
        expect(body["num_gpus"] in (1, 2, 4, 8), f"num_gpus {body['num_gpus']!r}")
        expect(str(body["script_id"]) in self.scripts, f"unknown script {body['script_id']!r}")
        expect(re.fullmatch(r"[a-zA-Z0-9 _-]{1,40}", str(body["name"])) is not None, "bad name")
        assert row is not None
        return row

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.launches.append(body)
        try:
            row = self._check(body)
        except Invalid as exc:
            return web.json_response({"detail": [{"loc": ["body"], "msg": str(exc)}]}, status=422)
        if {body["gpu_type"], body["region"]} & self.no_capacity or row["num_free_devices"] < body[
            "num_gpus"
        ]:
            message = f"No free {body['gpu_type']} GPUs right now. Try again later."
            return web.json_response({"success": False, "message": message}, status=400)
        machine_id = await asyncio.to_thread(self._boot, body, row)
        return web.json_response({"success": True, "machine_id": int(machine_id)})

    async def _destroy(self, request: web.Request) -> web.Response:
        machine_id = request.query.get("machine_id", "")
        if self.destroy_errors > 0:
            self.destroy_errors -= 1
            return web.json_response({"detail": "Internal server error"}, status=500)
        if machine_id not in self.instances:
            return web.json_response({"success": False, "message": "Instance not found"}, status=404)
        del self.instances[machine_id]
        await self.power_off(machine_id)
        self.destroyed.append(machine_id)
        return web.json_response({"success": True})

    def _boot(self, body: dict[str, Any], gpu: dict[str, Any]) -> str:
        machine_id = str(next(self._ids))
        address = loopback(19, next(_addresses))
        port = free_port(address)
        script = self.scripts[str(body["script_id"])]["text"]
        price = (gpu["spot_price"] if body["is_spot"] else gpu["price_per_hour"]) * body["num_gpus"]
        self.instances[machine_id] = {
            "machine_id": int(machine_id),
            "name": body["name"],
            "status": "Running",
            # JarvisLabs names root; the fake names the one user its sshd lets in
            "ssh_str": f"ssh -p {port} {getpass.getuser()}@{address}",
            "gpu_type": body["gpu_type"],
            "num_gpus": body["num_gpus"],
            "region": body["region"],
            "template": "pytorch",
            "framework": "pytorch",
            "is_spot": body["is_spot"],
            "cost": round(price, 2),
            "hdd": body["hdd"],
        }
        self.booting[machine_id] = self.booting_reads
        host_key, key = exported_host_key(script), login_key(script)
        if host_key is None or key is None:
            self.instances[machine_id]["status"] = "Failed"  # the script found no key and failed
            return machine_id
        server = self.boot_machine(machine_id, address, port, host_key, key)
        # The script's key line and guardian line, as the instance runs them (as root; here as this
        # user, with the login's home).
        self.run_boot_lines(machine_id, server, script, {})
        return machine_id
