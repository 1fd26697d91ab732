"""A Vultr API v2 on loopback whose instances are real OpenSSH servers.

It answers the calls the provider makes, as Vultr documents them, under `/v2` with a bearer API
key (every call without it is refused with 401): `GET /plans?type=`, `POST|GET /ssh-keys`,
`DELETE /ssh-keys/{id}`, `POST|GET /firewalls`, `POST /firewalls/{id}/rules`,
`DELETE /firewalls/{id}`, `POST /instances`, `GET /instances?tag=&label=`, `GET /instances/{id}`
and `DELETE /instances/{id}`. Answers wrap what they return in its kind's name, errors are
`{"error": ..., "status": N}`, and lists are paged by cursor (`meta.links.next`), a page here
holding at most `page_size` rows so that every listing is read across pages. A create request is
checked field by field (unknown fields, plans, regions, OS ids, keys or firewall groups are
refused with 400). `GET /ip` (no key) echoes the caller's address, as `checkip` does.

A created instance boots for real: the fake decodes its user data, reads the host key the script
exports and the login key from its registered SSH key, starts an sshd (`ssh_hosts.start_machine`)
on a loopback address of its own (127.W.13.x) at `ssh_port`, and runs the script's credentials
line and guardian line as cloud-init would, with the login's home. Knobs: `no_capacity` (plan ids
or regions) answers the refusal Vultr gives a plan a region cannot deploy; `sshd_down` boots
instances whose sshd never answers; `delete_errors` fails that many instance deletions with a
500; `impostor_key` boots instances with another host key; `refuse_rules` refuses firewall rules.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import uuid
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, expect_fields, exported_host_key
from ssh_hosts import free_port, loopback


def _plan(
    plan_id: str, gpu: str, vram: int, vcpus: int, ram_gb: int, hourly: float, regions: list[str]
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": plan_id,
        "vcpu_count": vcpus,
        "ram": ram_gb * 1024,
        "disk": 350,
        "disk_count": 1,
        "bandwidth": 5120,
        "monthly_cost": round(hourly * 730),
        "hourly_cost": hourly,
        "type": "vcg" if gpu else "vc2",
        "locations": regions,
    }
    if gpu:
        row.update(gpu_vram_gb=vram, gpu_type=gpu)
    return row


#: Vultr's plans as `GET /plans` lists them (prices per instance; regions that can deploy now).
PLANS: list[dict[str, Any]] = [
    _plan("vcg-a100-1c-6g-4vram", "NVIDIA_A100", 4, 1, 6, 0.123, ["ewr", "ord"]),
    _plan("vcg-a100-12c-120g-80vram", "NVIDIA_A100", 80, 12, 120, 2.397, ["ewr", "ord"]),
    _plan("vcg-a100-24c-240g-160vram", "NVIDIA_A100", 160, 24, 240, 4.794, ["ewr"]),
    _plan("vcg-a40-24c-120g-48vram", "NVIDIA_A40", 48, 24, 120, 1.712, ["ord"]),
    _plan("vcg-l40s-16c-180g-48vram", "NVIDIA_L40S", 48, 16, 180, 1.671, ["ewr", "ord"]),
    _plan("vcg-h100-16c-240g-80vram", "NVIDIA_H100", 80, 16, 240, 2.990, ["sea"]),
    _plan("vc2-2c-4gb", "", 0, 2, 4, 0.030, ["ewr", "ord", "sea"]),
]
REGIONS = ("ewr", "ord", "sea")
OS_IDS = {2284: "Ubuntu 24.04 LTS x64", 1743: "Ubuntu 22.04 LTS x64"}
CREATE_FIELDS = {
    "region",
    "plan",
    "os_id",
    "iso_id",
    "snapshot_id",
    "app_id",
    "image_id",
    "ipxe_chain_url",
    "script_id",
    "enable_ipv6",
    "disable_public_ipv4",
    "attach_vpc",
    "vpc_only",
    "enable_vpc",
    "label",
    "sshkey_id",
    "backups",
    "ddos_protection",
    "activation_email",
    "hostname",
    "firewall_group_id",
    "reserved_ipv4",
    "tags",
    "user_data",
    "user_scheme",
    "app_variables",
}
RULE_FIELDS = {"ip_type", "protocol", "subnet", "subnet_size", "port", "source", "notes"}
#: What Vultr answers when a plan cannot be deployed in the region asked for (sold out there).
NO_CAPACITY = "Cannot add instance plan is not available in the selected region"
_addresses = itertools.count(2)


def _has(value: Any, wanted: str) -> bool:
    """Whether a row's field is `wanted` (a list field: holds it), as Vultr's list filters match."""
    return wanted in value if isinstance(value, list) else value == wanted


def error(message: str, status: int) -> web.Response:
    return web.json_response({"error": message, "status": status}, status=status)


@attrs.define
class FakeVultr(FakeCloud):
    api_key: str
    ssh_port: int = 0
    page_size: int = 2
    instances: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    ssh_keys: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    firewalls: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: Each firewall group's rules, by group id.
    rules: dict[str, list[dict[str, Any]]] = attrs.field(factory=dict)
    #: Every create body received, accepted or not, in order.
    creates: list[dict[str, Any]] = attrs.field(factory=list)
    deleted: list[str] = attrs.field(factory=list)
    no_capacity: set[str] = attrs.field(factory=set)
    delete_errors: int = 0
    impostor_key: str | None = None
    #: Refuse every firewall rule, as Vultr does a group already at its `max_rule_count`.
    refuse_rules: bool = False
    #: Every key a request came with, good or not.
    keys_seen: list[str] = attrs.field(factory=list)

    NAME: ClassVar[str] = "Vultr"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v2"

    @property
    def echo_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ip"

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> FakeVultr:
        self.ssh_port = free_port("127.0.0.1")
        return super().start()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes(
            [
                web.get("/ip", self._echo),
                web.get("/v2/plans", self._plans),
                web.post("/v2/ssh-keys", self._add_key),
                web.get("/v2/ssh-keys", self._list("ssh_keys", "ssh_keys")),
                web.delete("/v2/ssh-keys/{id}", self._remove("ssh_keys", "Invalid SSH key.")),
                web.post("/v2/firewalls", self._add_firewall),
                web.get("/v2/firewalls", self._list("firewalls", "firewall_groups")),
                web.post("/v2/firewalls/{id}/rules", self._add_rule),
                web.delete("/v2/firewalls/{id}", self._remove("firewalls", "Invalid firewall group.")),
                web.post("/v2/instances", self._create),
                web.get("/v2/instances", self._list("instances", "instances")),
                web.get("/v2/instances/{id}", self._get),
                web.delete("/v2/instances/{id}", self._delete),
            ]
        )
        return app

    def check_nothing_left(self) -> None:
        assert not self.instances, f"instances left running: {sorted(self.instances)}"
        assert not self.ssh_keys and not self.firewalls, "SSH keys or firewall groups left behind"
        super().check_nothing_left()

    # -- auth, paging ------------------------------------------------------------------------------

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/v2/"):
            key = request.headers.get("Authorization", "").removeprefix("Bearer ")
            self.keys_seen.append(key)
            if key != self.api_key:
                return error("Invalid API token.", 401)
        return await handler(request)

    async def _echo(self, request: web.Request) -> web.Response:
        return web.Response(text=f"{request.remote}\n")

    def _page(self, request: web.Request, kind: str, rows: list[dict[str, Any]]) -> web.Response:
        size = min(int(request.query.get("per_page", "100")), 500, self.page_size)
        cursor = request.query.get("cursor", "")
        start = int(base64.b64decode(cursor).decode().removeprefix("next__")) if cursor else 0
        page = rows[start : start + size]
        following = start + size
        next_cursor = (
            base64.b64encode(f"next__{following}".encode()).decode() if following < len(rows) else ""
        )
        return web.json_response(
            {kind: page, "meta": {"total": len(rows), "links": {"next": next_cursor, "prev": ""}}}
        )

    def _list(self, store: str, kind: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            rows = list(getattr(self, store).values())
            for field, key in (("tag", "tags"), ("label", "label"), ("region", "region")):
                wanted = request.query.get(field)
                if wanted is not None:
                    rows = [r for r in rows if _has(r.get(key), wanted)]
            return self._page(request, kind, rows)

        return handler

    def _remove(self, store: str, missing: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            if getattr(self, store).pop(request.match_info["id"], None) is None:
                return error(missing, 404)
            return web.Response(status=204)

        return handler

    # -- plans, keys, firewalls --------------------------------------------------------------------

    async def _plans(self, request: web.Request) -> web.Response:
        kind = request.query.get("type", "all")
        return self._page(request, "plans", [p for p in PLANS if kind in ("all", p["type"])])

    async def _add_key(self, request: web.Request) -> web.Response:
        body = await request.json()
        if not isinstance(body.get("name"), str) or not str(body.get("ssh_key", "")).startswith("ssh-"):
            return error("Invalid SSH key.", 400)
        row = {"id": str(uuid.uuid4()), "date_created": "2026-11-29T10:00:00+00:00", **body}
        self.ssh_keys[row["id"]] = row
        return web.json_response({"ssh_key": row}, status=201)

    async def _add_firewall(self, request: web.Request) -> web.Response:
        body = await request.json()
        group_id = str(uuid.uuid4())[:8]
        row = {
            "id": group_id,
            "description": str(body.get("description", "")),
            "date_created": "2026-11-29T10:00:00+00:00",
            "date_modified": "2026-11-29T10:00:00+00:00",
            "instance_count": 0,
            "rule_count": 0,
            "max_rule_count": 50,
        }
        self.firewalls[group_id], self.rules[group_id] = row, []
        return web.json_response({"firewall_group": row}, status=201)

    async def _add_rule(self, request: web.Request) -> web.Response:
        group = request.match_info["id"]
        body = await request.json()
        try:
            expect(group in self.firewalls, "Invalid firewall group.")
            expect_fields(body, RULE_FIELDS)
            expect(
                body.get("ip_type") in ("v4", "v6") and body.get("protocol") in ("tcp", "udp", "icmp", "gre"),
                "ip_type and protocol are required",
            )
            expect(
                isinstance(body.get("subnet"), str) and isinstance(body.get("subnet_size"), int),
                "subnet and subnet_size are required",
            )
        except Invalid as exc:
            return error(str(exc), 400)
        if self.refuse_rules:
            return error("Firewall group has reached its maximum number of rules.", 400)
        rule = {"id": len(self.rules[group]) + 1, "action": "accept", **body}
        self.rules[group].append(rule)
        self.firewalls[group]["rule_count"] += 1
        return web.json_response({"firewall_rule": rule}, status=201)

    # -- instances ---------------------------------------------------------------------------------

    def _check(self, body: Any) -> tuple[dict[str, Any], str]:
        expect_fields(body, CREATE_FIELDS)
        plan = next((p for p in PLANS if p["id"] == body.get("plan")), None)
        expect(plan is not None, "Invalid plan chosen.")
        expect(body.get("region") in REGIONS, "Invalid Region chosen.")
        expect((body.get("os_id") in OS_IDS) != bool(body.get("image_id")), "Invalid OS chosen.")
        keys = body.get("sshkey_id")
        expect(isinstance(keys, list) and set(keys) <= set(self.ssh_keys), "Invalid SSH key.")
        expect(body.get("firewall_group_id") in self.firewalls, "Invalid firewall group.")
        tags = body.get("tags", [])
        expect(
            isinstance(tags, list) and all(isinstance(t, str) for t in tags), "tags must be a list of strings"
        )
        try:
            script = base64.b64decode(body.get("user_data", ""), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise Invalid("user_data must be base64") from None
        return plan, script  # type: ignore[return-value]

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.creates.append(body)
        try:
            plan, script = self._check(body)
        except Invalid as exc:
            return error(str(exc), 400)
        if {body["plan"], body["region"]} & self.no_capacity or body["region"] not in plan["locations"]:
            return error(NO_CAPACITY, 400)
        row = await asyncio.to_thread(self._boot, body, plan, script)
        return web.json_response({"instance": {**row, "status": "pending", "main_ip": "0.0.0.0"}}, status=202)

    async def _get(self, request: web.Request) -> web.Response:
        row = self.instances.get(request.match_info["id"])
        if row is None:
            return error("Invalid instance-id.", 404)
        return web.json_response({"instance": row})

    async def _delete(self, request: web.Request) -> web.Response:
        instance_id = request.match_info["id"]
        if self.delete_errors > 0:
            self.delete_errors -= 1
            return error("Internal server error.", 500)
        row = self.instances.pop(instance_id, None)
        if row is None:
            return error("Invalid instance-id.", 404)
        if row.get("firewall_group_id") in self.firewalls:
            self.firewalls[row["firewall_group_id"]]["instance_count"] -= 1
        await self.power_off(instance_id)
        self.deleted.append(instance_id)
        return web.Response(status=204)

    # -- machines ----------------------------------------------------------------------------------

    def _boot(self, body: dict[str, Any], plan: dict[str, Any], script: str) -> dict[str, Any]:
        instance_id = str(uuid.uuid4())
        address = loopback(13, next(_addresses))
        row = {
            "id": instance_id,
            "os": OS_IDS.get(body.get("os_id"), "Application"),
            "ram": plan["ram"],
            "disk": plan["disk"],
            "main_ip": address,
            "vcpu_count": plan["vcpu_count"],
            "region": body["region"],
            "plan": body["plan"],
            "date_created": "2026-11-29T10:00:00+00:00",
            "status": "active",
            "allowed_bandwidth": plan["bandwidth"],
            "netmask_v4": "255.255.254.0",
            "gateway_v4": "127.0.0.1",
            "power_status": "running",
            "server_status": "ok",
            "v6_network": "",
            "v6_main_ip": "",
            "v6_network_size": 0,
            "label": body.get("label", ""),
            "internal_ip": address if body.get("enable_vpc") else "",
            "kvm": "",
            "hostname": body.get("hostname", ""),
            "os_id": body.get("os_id", 0),
            "app_id": 0,
            "image_id": body.get("image_id", ""),
            "firewall_group_id": body["firewall_group_id"],
            "features": [],
            "tags": body.get("tags", []),
            "user_scheme": "root",
        }
        self.instances[instance_id] = row
        self.firewalls[body["firewall_group_id"]]["instance_count"] += 1
        host_key = self.impostor_key or exported_host_key(script)
        if host_key is None:
            row["power_status"] = "stopped"  # the script found no key and failed: sshd never started
            return row
        login_key = self.ssh_keys[body["sshkey_id"][0]]["ssh_key"]
        server = self.boot_machine(instance_id, address, self.ssh_port, host_key, login_key)
        # The script's credentials line and guardian line, as cloud-init runs them (as root; here
        # as this user, with the login's home).
        self.run_boot_lines(instance_id, server, script, {})
        return row
