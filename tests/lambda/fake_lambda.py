"""Lambda's Cloud API on loopback whose VMs are real OpenSSH servers.

It answers the calls the provider makes, as Lambda's Cloud API v1 documents them, under `/api/v1`,
every answer wrapped in `{"data": ...}` and every error in `{"error": {"code", "message",
"suggestion"}}`: `GET /instance-types` (each type with `regions_with_capacity_available`),
`POST /instance-operations/launch` (`{"data": {"instance_ids": [...]}}`), `GET /instances`,
`GET /instances/{id}`, `POST /instance-operations/terminate` with `{"instance_ids": [...]}`, and
`GET|POST /ssh-keys`, `DELETE /ssh-keys/{id}`. Every call needs the API key, as a bearer token or
as HTTP basic auth's user name (both as Lambda documents); a launch request is checked field by
field (unknown fields, types, regions or SSH key names are refused with 400).

A launched VM boots for real: the fake reads the host key from its cloud-init user data
(`ssh_keys.ed25519_private`) and the login key from its registered SSH key, starts an sshd
(`ssh_hosts.start_machine`) on a loopback address of its own (127.W.7.x) at `ssh_port`, and runs
the user data's `runcmd` lines (the guardian's key, the guardian) as the VM would, with the
login's home. Knobs: `no_capacity` (type or region names) refuses a launch there with Lambda's
insufficient-capacity error though the listing shows capacity (the race Lambda warns of);
`sold_out` (type names) lists those types with no region; `booting_reads` shows a new VM
`booting`, without an address, for that many reads; `launch_interval` answers 429 to a
launch sooner than that after the last one; `terminate_errors` fails that many terminate calls
with a 500; `sshd_down` boots VMs whose sshd never answers; `impostor_key` boots VMs with another
host key.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import time
import uuid
from typing import Any, ClassVar

import attrs
import yaml
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, expect_fields
from ssh_hosts import free_port, loopback

PREFIX = "/api/v1"
REGIONS = {"us-east-1": "Virginia, USA", "us-west-1": "California, USA", "europe-central-1": "Germany"}


def _type(name: str, gpu: str, gpus: int, vcpus: int, ram: int, cents: int, *regions: str) -> dict[str, Any]:
    return {
        "instance_type": {
            "name": name,
            "description": f"{gpus}x {gpu}",
            "gpu_description": gpu,
            "price_cents_per_hour": cents,
            "specs": {"vcpus": vcpus, "memory_gib": ram, "storage_gib": 512, "gpus": gpus},
        },
        "regions_with_capacity_available": [{"name": r, "description": REGIONS[r]} for r in regions],
    }


#: Lambda's instance types as `GET /instance-types` lists them (prices per instance per hour).
INSTANCE_TYPES: dict[str, dict[str, Any]] = {
    t["instance_type"]["name"]: t
    for t in (
        _type("gpu_1x_a10", "A10 (24 GB PCIe)", 1, 30, 200, 75, "us-east-1", "us-west-1"),
        _type("gpu_1x_a100_sxm4", "A100 (40 GB SXM4)", 1, 30, 200, 129, "us-east-1"),
        _type("gpu_8x_a100_80gb_sxm4", "A100 (80 GB SXM4)", 8, 240, 1800, 1432, "us-west-1"),
        _type("gpu_1x_h100_pcie", "H100 (80 GB PCIe)", 1, 26, 200, 249, "us-east-1", "us-west-1"),
        _type("gpu_1x_h100_sxm5", "H100 (80 GB SXM5)", 1, 26, 225, 329, "us-east-1", "europe-central-1"),
        _type("gpu_1x_gh200", "GH200 (96 GB)", 1, 64, 432, 149),
    )
}
LAUNCH_FIELDS = {
    "region_name",
    "instance_type_name",
    "ssh_key_names",
    "file_system_names",
    "file_system_mounts",
    "hostname",
    "name",
    "image",
    "user_data",
    "tags",
    "firewall_rulesets",
    "quantity",
}
USER_DATA_LIMIT = 1 << 20
_addresses = itertools.count(2)


def error(status: int, code: str, message: str, suggestion: str = "") -> web.Response:
    body = {"code": code, "message": message, **({"suggestion": suggestion} if suggestion else {})}
    return web.json_response({"error": body}, status=status)


def ok(content: Any, status: int = 200) -> web.Response:
    return web.json_response({"data": content}, status=status)


def user_data_of(text: str) -> dict[str, Any]:
    """The cloud-config the user data holds, as cloud-init parses it."""
    expect(text.startswith("#cloud-config\n"), "user_data must be cloud-config")
    config = yaml.safe_load(text)
    expect(isinstance(config, dict), "user_data must be a mapping")
    return config  # type: ignore[no-any-return]


def runcmd_lines(config: dict[str, Any]) -> list[str]:
    """The shell lines of `runcmd`: an entry `["su", "-", user, "-c", line]` runs `line` as the
    login user (here: this user, with the machine's home)."""
    return [entry[-1] if isinstance(entry, list) else str(entry) for entry in config.get("runcmd") or []]


@attrs.define
class FakeLambda(FakeCloud):
    api_key: str
    ssh_port: int = 0
    instances: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    ssh_keys: dict[str, dict[str, str]] = attrs.field(factory=dict)
    #: Every launch body received, accepted or not, in order.
    launches: list[dict[str, Any]] = attrs.field(factory=list)
    terminated: list[str] = attrs.field(factory=list)
    #: Every key a call was made with (the API's, or one a VM kept), in order.
    keys_used: list[str] = attrs.field(factory=list)
    no_capacity: set[str] = attrs.field(factory=set)
    sold_out: set[str] = attrs.field(factory=set)
    launch_interval: float = 0.0
    rate_limited: int = 0
    terminate_errors: int = 0
    impostor_key: str | None = None
    #: How many reads show a new VM `booting`, without an address, before it is `active`.
    booting_reads: int = 0
    _reads: dict[str, int] = attrs.field(factory=dict)
    #: Other keys the account accepts (a guardian's own key).
    other_keys: set[str] = attrs.field(factory=set)
    _last_launch: float = -1e9

    NAME: ClassVar[str] = "Lambda"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PREFIX}"

    def start(self) -> FakeLambda:
        self.ssh_port = free_port("127.0.0.1")
        return super().start()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes(
            [
                web.get(f"{PREFIX}/instance-types", self._types),
                web.post(f"{PREFIX}/instance-operations/launch", self._launch),
                web.post(f"{PREFIX}/instance-operations/terminate", self._terminate),
                web.get(f"{PREFIX}/instances", self._all),
                web.get(f"{PREFIX}/instances/{{id}}", self._get),
                web.get(f"{PREFIX}/ssh-keys", self._keys),
                web.post(f"{PREFIX}/ssh-keys", self._add_key),
                web.delete(f"{PREFIX}/ssh-keys/{{id}}", self._remove_key),
            ]
        )
        return app

    def check_nothing_left(self) -> None:
        assert not self.instances, f"VMs left running: {sorted(self.instances)}"
        assert not self.ssh_keys, f"SSH keys left behind: {sorted(k['name'] for k in self.ssh_keys.values())}"
        super().check_nothing_left()

    # -- auth --------------------------------------------------------------------------------------

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        key = _key_of(request.headers.get("Authorization", ""))
        if key not in {self.api_key, *self.other_keys}:
            return error(
                401,
                "global/invalid-api-key",
                "API key was invalid, expired, or deleted.",
                "Check your API key or create a new one, then try again.",
            )
        self.keys_used.append(key)
        return await handler(request)

    # -- catalog and keys --------------------------------------------------------------------------

    async def _types(self, request: web.Request) -> web.Response:
        listing = {
            name: {**entry, "regions_with_capacity_available": []} if name in self.sold_out else entry
            for name, entry in INSTANCE_TYPES.items()
        }
        return ok(listing)

    async def _keys(self, request: web.Request) -> web.Response:
        return ok(list(self.ssh_keys.values()))

    async def _add_key(self, request: web.Request) -> web.Response:
        body = await request.json()
        if not isinstance(body.get("name"), str) or not isinstance(body.get("public_key"), str):
            return error(400, "global/invalid-parameters", "name and public_key are required")
        if any(k["name"] == body["name"] for k in self.ssh_keys.values()):
            return error(400, "global/invalid-parameters", "An SSH key with this name already exists")
        key_id = uuid.uuid4().hex
        self.ssh_keys[key_id] = {"id": key_id, "name": body["name"], "public_key": body["public_key"]}
        return ok(self.ssh_keys[key_id])

    async def _remove_key(self, request: web.Request) -> web.Response:
        if self.ssh_keys.pop(request.match_info["id"], None) is None:
            return error(404, "global/object-does-not-exist", "Specified SSH key does not exist.")
        return ok({})

    # -- instances ---------------------------------------------------------------------------------

    def _check(self, body: Any) -> dict[str, Any]:
        expect_fields(body, LAUNCH_FIELDS)
        kind = INSTANCE_TYPES.get(body.get("instance_type_name"))
        expect(kind is not None, f"unknown instance type {body.get('instance_type_name')!r}")
        expect(body.get("region_name") in REGIONS, f"unknown region {body.get('region_name')!r}")
        keys = body.get("ssh_key_names")
        names = {k["name"] for k in self.ssh_keys.values()}
        expect(isinstance(keys, list) and len(keys) == 1, "exactly one SSH key name must be given")
        expect(keys[0] in names, f"unknown SSH key {keys[0]!r}")
        expect(body.get("quantity", 1) == 1, "the provider launches one instance per call")
        expect(isinstance(body.get("name"), str) and 0 < len(body["name"]) <= 64, "name: 1 to 64 characters")
        text = body.get("user_data", "")
        expect(isinstance(text, str) and len(text.encode()) <= USER_DATA_LIMIT, "user_data: at most 1 MB")
        image = body.get("image")
        one = isinstance(image, dict) and len(image) == 1 and set(image) <= {"id", "family"}
        expect(image is None or one, "image: {'id': ...} or {'family': ...}")
        return kind  # type: ignore[return-value]

    async def _launch(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.launches.append(body)
        if time.monotonic() - self._last_launch < self.launch_interval:
            self.rate_limited += 1
            return error(429, "global/too-many-requests", "Too many requests; try again later.")
        try:
            kind = self._check(body)
            config = user_data_of(body.get("user_data") or "#cloud-config\n{}")
        except Invalid as exc:
            return error(400, "global/invalid-parameters", str(exc))
        listed = {r["name"] for r in kind["regions_with_capacity_available"]}
        refused = {body["instance_type_name"], body["region_name"]} & self.no_capacity
        if refused or body["region_name"] not in listed or body["instance_type_name"] in self.sold_out:
            return error(
                400,
                "instance-operations/launch/insufficient-capacity",
                "Not enough capacity to fulfill launch request.",
                "Choose an instance type with more availability, or try again later.",
            )
        self._last_launch = time.monotonic()
        instance_id = await asyncio.to_thread(self._boot, body, kind, config)
        return ok({"instance_ids": [instance_id]})

    async def _all(self, request: web.Request) -> web.Response:
        return ok([self._read(row) for row in self.instances.values()])

    async def _get(self, request: web.Request) -> web.Response:
        row = self.instances.get(request.match_info["id"])
        if row is None:
            return error(404, "global/object-does-not-exist", "Specified instance does not exist.")
        return ok(self._read(row))

    def _read(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row as Lambda shows it now: `booting`, without an address, for its first reads."""
        seen = self._reads[row["id"]] = self._reads.get(row["id"], 0) + 1
        if seen > self.booting_reads or row["status"] != "active":
            return row
        return {**row, "status": "booting", "ip": None, "private_ip": None}

    async def _terminate(self, request: web.Request) -> web.Response:
        body = await request.json()
        ids = body.get("instance_ids") if isinstance(body, dict) else None
        if not isinstance(ids, list) or not ids:
            return error(400, "global/invalid-parameters", "instance_ids is required")
        if self.terminate_errors > 0:
            self.terminate_errors -= 1
            return error(500, "global/unknown", "An unknown error occurred.")
        if any(i not in self.instances for i in ids):
            return error(404, "global/object-does-not-exist", "Specified instance does not exist.")
        done = []
        for instance_id in ids:
            done.append({**self.instances.pop(instance_id), "status": "terminated"})
            await self.power_off(instance_id)
            self.terminated.append(instance_id)
        return ok({"terminated_instances": done})

    # -- VMs ---------------------------------------------------------------------------------------

    def _boot(self, body: dict[str, Any], kind: dict[str, Any], config: dict[str, Any]) -> str:
        instance_id = uuid.uuid4().hex
        address = loopback(7, next(_addresses))
        region = body["region_name"]
        self.instances[instance_id] = {
            "id": instance_id,
            "name": body["name"],
            "ip": address,
            "private_ip": address,
            "status": "active",
            "ssh_key_names": body["ssh_key_names"],
            "file_system_names": [],
            "region": {"name": region, "description": REGIONS[region]},
            "instance_type": kind["instance_type"],
            "hostname": address.replace(".", "-"),
            "is_reserved": False,
        }
        host_key = self.impostor_key or (config.get("ssh_keys") or {}).get("ed25519_private")
        if not host_key:
            self.instances[instance_id]["status"] = "unhealthy"  # cloud-init found no key
            return instance_id
        (key_name,) = body["ssh_key_names"]
        login_key = next(k["public_key"] for k in self.ssh_keys.values() if k["name"] == key_name)
        server = self.boot_machine(instance_id, address, self.ssh_port, host_key, login_key)
        self.run_boot_lines(instance_id, server, "\n".join(runcmd_lines(config)), {})
        return instance_id


def _key_of(header: str) -> str:
    """The API key of an `Authorization` header: `Bearer <key>`, or basic auth `<key>:`."""
    scheme, _, value = header.partition(" ")
    if scheme == "Bearer":
        return value
    if scheme == "Basic":
        try:
            return base64.b64decode(value).decode().partition(":")[0]
        except (binascii.Error, UnicodeDecodeError):
            return ""
    return ""
