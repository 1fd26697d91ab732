"""Hyperstack's Infrahub API on loopback, whose VMs are real OpenSSH servers.

It is the object-storage key fake of tests/storage (`FakeHyperstack`: the `api_key` header checked
on every call, each call kept in `calls`, the access keys) with the compute endpoints the provider
calls, under `/v1`, shaped as Hyperstack's API reference documents them (every answer in the
`{"status", "message", ...}` envelope but the pricebook's bare list, errors as `{"status": false,
"message", "error_reason"}`): `GET /core/flavors?region=` (`data`: per GPU and region, its
`flavors` with `stock_available`), `GET /pricebook`, `GET|POST /core/environments`, `GET|POST
/core/keypairs`, `DELETE /core/keypair/{id}`, `POST|GET /core/virtual-machines` (paged by `page` and
`pageSize`, filtered by name with `search`), `GET|DELETE /core/virtual-machines/{id}`. A create
request is checked field by field (unknown fields, flavors, environments or keypairs are refused with 400).

A created VM boots for real: the fake reads its cloud-init user data (the host key under
`ssh_keys`, the key file under `write_files`, the guardian line in `runcmd`), starts an sshd
(`ssh_hosts.start_machine`) on a loopback address of its own (127.x.7.y) at `ssh_port` with the
keypair's public key, writes the key file into the login's home and runs the guardian line as the
VM would. Knobs: `out_of_stock` (flavor names the listing shows without stock), `no_capacity`
(flavor names or regions whose creates are refused for capacity; the API reference documents no
wording for it, so the fake uses a plain "not enough resources" 409), `sshd_down`, `vm_delete_errors` (that
many VM deletes answer 500), `impostor_key` (VMs answer with another host key).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import attrs
import yaml
from aiohttp import web
from cloud_fakes import Invalid, expect, expect_fields
from ssh_hosts import free_port, loopback

sys.path.insert(0, str(Path(__file__).parent.parent / "storage"))

from fake_hyperstack import FakeHyperstack  # noqa: E402


def _flavor(
    flavor_id: int, name: str, region: str, gpu: str, gpus: int, cpu: int, ram: int
) -> dict[str, Any]:
    return {
        "id": flavor_id,
        "name": name,
        "display_name": None,
        "region_name": region,
        "cpu": cpu,
        "ram": ram,
        "disk": 100,
        "ephemeral": 750 if gpus else 0,
        "gpu": gpu,
        "gpu_count": gpus,
        "stock_available": True,
        "created_at": "2026-05-06T16:04:09Z",
        "labels": [],
        "features": {},
    }


#: Hyperstack's flavors (a few of each region's), as `GET /core/flavors` lists them.
FLAVORS = [
    _flavor(1, "n3-A100x1", "CANADA-1", "A100-80G-PCIe", 1, 28, 120),
    _flavor(2, "n3-A100x2", "CANADA-1", "A100-80G-PCIe", 2, 60, 240),
    _flavor(3, "n3-H100x1", "CANADA-1", "H100-80G-PCIe", 1, 28, 180),
    _flavor(4, "n3-L40x1", "CANADA-1", "L40", 1, 28, 58),
    _flavor(5, "n3-A100x1", "NORWAY-1", "A100-80G-PCIe", 1, 28, 120),
    _flavor(6, "n1-cpu-small", "NORWAY-1", "", 0, 4, 4),
]
#: `GET /pricebook`: USD per GPU per hour (a CPU flavor by its own name).
PRICEBOOK = [
    {
        "id": 1,
        "name": "A100-80G-PCIe",
        "value": 1.35,
        "original_value": 1.35,
        "discount_applied": False,
        "start_time": None,
        "end_time": None,
    },
    {
        "id": 2,
        "name": "H100-80G-PCIe",
        "value": 1.90,
        "original_value": 1.90,
        "discount_applied": False,
        "start_time": None,
        "end_time": None,
    },
    {
        "id": 3,
        "name": "L40",
        "value": 1.00,
        "original_value": 1.00,
        "discount_applied": False,
        "start_time": None,
        "end_time": None,
    },
    {
        "id": 4,
        "name": "n1-cpu-small",
        "value": 0.05,
        "original_value": 0.05,
        "discount_applied": False,
        "start_time": None,
        "end_time": None,
    },
]
REGIONS = ("CANADA-1", "NORWAY-1", "US-1")
CREATE_FIELDS = {
    "name",
    "environment_name",
    "image_name",
    "flavor_name",
    "key_name",
    "count",
    "assign_floating_ip",
    "create_bootable_volume",
    "user_data",
    "labels",
    "security_rules",
    "callback_url",
    "volume_name",
    "flavor",
    "profile",
    "enable_port_randomization",
}
RULE_FIELDS = {"direction", "ethertype", "protocol", "remote_ip_prefix", "port_range_min", "port_range_max"}
_addresses = itertools.cycle(range(2, 255))
_ids = itertools.count(5000)


def _error(status: int, message: str, reason: str) -> web.Response:
    return web.json_response({"status": False, "message": message, "error_reason": reason}, status=status)


def _ok(**body: Any) -> web.Response:
    return web.json_response({"status": True, "message": "Success", **body})


@attrs.define
class FakeInfrahub(FakeHyperstack):
    ssh_port: int = attrs.field(default=0, kw_only=True)
    vms: dict[int, dict[str, Any]] = attrs.field(factory=dict, kw_only=True)
    environments: dict[int, dict[str, Any]] = attrs.field(factory=dict, kw_only=True)
    keypairs: dict[int, dict[str, Any]] = attrs.field(factory=dict, kw_only=True)
    #: Every create body received, accepted or not, in order; every VM id deleted.
    creates: list[dict[str, Any]] = attrs.field(factory=list, kw_only=True)
    deleted_vms: list[int] = attrs.field(factory=list, kw_only=True)
    out_of_stock: set[str] = attrs.field(factory=set, kw_only=True)
    no_capacity: set[str] = attrs.field(factory=set, kw_only=True)
    vm_delete_errors: int = attrs.field(default=0, kw_only=True)
    impostor_key: str | None = attrs.field(default=None, kw_only=True)

    def start(self) -> FakeInfrahub:
        self.ssh_port = free_port("127.0.0.1")
        return super().start()

    def app(self) -> web.Application:
        app = super().app()
        app.add_routes(
            [
                web.get("/v1/core/flavors", self._flavors),
                web.get("/v1/pricebook", self._pricebook),
                web.get("/v1/core/environments", self._listing("environments")),
                web.post("/v1/core/environments", self._create_environment),
                web.get("/v1/core/keypairs", self._listing("keypairs")),
                web.post("/v1/core/keypairs", self._import_keypair),
                web.delete("/v1/core/keypair/{id}", self._delete_keypair),
                web.post("/v1/core/virtual-machines", self._create_vm),
                web.get("/v1/core/virtual-machines", self._vms),
                web.get("/v1/core/virtual-machines/{id}", self._vm),
                web.delete("/v1/core/virtual-machines/{id}", self._delete_vm),
            ]
        )
        return app

    def check_nothing_left(self) -> None:
        assert not self.vms, f"VMs left running: {sorted(self.vms)}"
        assert not self.keypairs, f"keypairs left behind: {sorted(k['name'] for k in self.keypairs.values())}"
        super().check_nothing_left()

    # -- catalog, environments, keypairs -----------------------------------------------------------

    async def _flavors(self, request: web.Request) -> web.Response:
        region = request.query.get("region")
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for flavor in FLAVORS:
            if region is None or flavor["region_name"] == region:
                row = {**flavor, "stock_available": flavor["name"] not in self.out_of_stock}
                groups.setdefault((flavor["gpu"], flavor["region_name"]), []).append(row)
        data = [{"gpu": gpu, "region_name": where, "flavors": rows} for (gpu, where), rows in groups.items()]
        return _ok(data=data)

    async def _pricebook(self, request: web.Request) -> web.Response:
        return web.json_response(PRICEBOOK)  # a bare list: the one answer without the envelope

    def _listing(self, store: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            return _ok(**{store: list(getattr(self, store).values())})

        return handler

    async def _create_environment(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("region") not in REGIONS or not body.get("name"):
            return _error(400, "name and a known region are required", "bad_request")
        if any(e["name"] == body["name"] for e in self.environments.values()):
            return _error(409, f"Environment {body['name']} already exists", "conflict")
        env = {"id": next(_ids), "name": body["name"], "region": body["region"], "created_at": "2026-01-01"}
        self.environments[env["id"]] = env
        return _ok(environment=env)

    async def _import_keypair(self, request: web.Request) -> web.Response:
        body = await request.json()
        env = self._environment(body.get("environment_name"))
        if env is None or not str(body.get("public_key", "")).startswith("ssh-"):
            return _error(400, "a known environment_name and a public_key are required", "bad_request")
        if any(k["name"] == body.get("name") and k["environment"] == env for k in self.keypairs.values()):
            return _error(409, f"Keypair {body.get('name')} already exists", "conflict")
        keypair = {
            "id": next(_ids),
            "name": body["name"],
            "environment": env,
            "public_key": body["public_key"],
            "fingerprint": "SHA256:fake",
            "created_at": "2026-01-01T00:00:00",
        }
        self.keypairs[keypair["id"]] = keypair
        return _ok(keypair=keypair)

    async def _delete_keypair(self, request: web.Request) -> web.Response:
        if self.keypairs.pop(_int(request.match_info["id"]), None) is None:
            return _error(404, "Keypair not found", "not_found")
        return _ok()

    def _environment(self, name: Any) -> dict[str, Any] | None:
        return next((e for e in self.environments.values() if e["name"] == name), None)

    # -- virtual machines --------------------------------------------------------------------------

    def _check(self, body: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        expect_fields(body, CREATE_FIELDS)
        expect(isinstance(body.get("name"), str) and 0 < len(body["name"]) <= 50, "name: 1 to 50 characters")
        expect(body.get("count") == 1, "count must be 1 here")
        env = self._environment(body.get("environment_name"))
        expect(env is not None, f"Environment {body.get('environment_name')!r} not found")
        assert env is not None
        name, region = body.get("flavor_name"), env["region"]
        flavor = next((f for f in FLAVORS if f["name"] == name and f["region_name"] == region), None)
        expect(flavor is not None, f"unknown flavor {body.get('flavor_name')!r} in {env['region']}")
        key = body.get("key_name")
        keypair = next(
            (k for k in self.keypairs.values() if (k["name"], k["environment"]) == (key, env)), None
        )
        expect(keypair is not None, f"keypair {body.get('key_name')!r} is not in the environment")
        for rule in body.get("security_rules") or []:
            expect_fields(rule, RULE_FIELDS)
            expect(set(rule) >= {"direction", "ethertype", "protocol", "remote_ip_prefix"}, "incomplete rule")
        return env, flavor, keypair  # type: ignore[return-value]

    async def _create_vm(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.creates.append(body)
        try:
            env, flavor, keypair = self._check(body)
        except Invalid as exc:
            return _error(400, str(exc), "bad_request")
        if {flavor["name"], env["region"]} & self.no_capacity or flavor["name"] in self.out_of_stock:
            return _error(409, f"Not enough resources available for {flavor['name']}", "conflict")
        row = await asyncio.to_thread(self._boot, body, env, flavor, keypair)
        return _ok(instances=[row])

    async def _vms(self, request: web.Request) -> web.Response:
        search, page = request.query.get("search", ""), int(request.query.get("page", 1))
        size = int(request.query.get("pageSize", 1000))
        found = [vm for vm in self.vms.values() if search in vm["name"]]
        rows = found[(page - 1) * size : page * size]
        return _ok(instances=rows, page=page, pageSize=size, count=len(found))

    async def _vm(self, request: web.Request) -> web.Response:
        vm = self.vms.get(_int(request.match_info["id"]))
        if vm is None:
            return _error(404, "Virtual machine not found", "not_found")
        return _ok(instance=vm)

    async def _delete_vm(self, request: web.Request) -> web.Response:
        if self.vm_delete_errors > 0:
            self.vm_delete_errors -= 1
            return web.json_response({"message": "Internal Server Error"}, status=500)
        vm_id = _int(request.match_info["id"])
        if self.vms.pop(vm_id, None) is None:
            return _error(404, "Virtual machine not found", "not_found")
        await self.power_off(str(vm_id))
        self.deleted_vms.append(vm_id)
        return _ok()

    def _boot(
        self, body: dict[str, Any], env: dict[str, Any], flavor: dict[str, Any], keypair: dict[str, Any]
    ) -> dict[str, Any]:
        vm_id = next(_ids)
        address = loopback(7, next(_addresses))
        row = {
            "id": vm_id,
            "name": body["name"],
            "status": "ACTIVE",
            "power_state": "RUNNING",
            "environment": {"id": env["id"], "name": env["name"], "region": env["region"]},
            "flavor": {k: flavor[k] for k in ("id", "name", "cpu", "ram", "disk", "gpu", "gpu_count")},
            "image": {"name": body.get("image_name")},
            "keypair": {"name": keypair["name"]},
            "floating_ip": address,
            "floating_ip_status": "ATTACHED",
            "fixed_ip": address,
            "labels": body.get("labels") or [],
            "security_rules": body.get("security_rules") or [],
            "created_at": "2026-01-01T00:00:00",
        }
        self.vms[vm_id] = row
        config = yaml.safe_load(body.get("user_data") or "") or {}
        host_key = self.impostor_key or (config.get("ssh_keys") or {}).get("ed25519_private")
        if not host_key:
            row["status"] = "ERROR"
            return row
        server = self.boot_machine(str(vm_id), address, self.ssh_port, host_key, keypair["public_key"])
        for item in config.get("write_files") or []:
            target = server.home / Path(item["path"]).name
            target.write_bytes(base64.b64decode(item["content"]))
            target.chmod(0o600)
        for argv in config.get("runcmd") or []:
            line = json.loads(argv) if isinstance(argv, str) else argv
            self.run_boot_lines(str(vm_id), server, line[-1], {}, credentials=False)
        return row


def _int(raw: str) -> int:
    return int(raw) if raw.isdigit() else -1
