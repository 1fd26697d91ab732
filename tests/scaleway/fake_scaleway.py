"""A Scaleway Instance API v1 on loopback whose servers are real OpenSSH servers.

It answers the calls the `scaleway` SDK makes for the provider, as Scaleway documents them, under
`/instance/v1/zones/{zone}` with an `X-Auth-Token` secret key (every call without it is refused
with 401 `denied_authentication`): `GET /products/servers` (paged, `X-Total-Count`),
`POST|GET /security_groups`, `POST /security_groups/{id}/rules`, `DELETE /security_groups/{id}`
(refused while a server uses the group), `POST /servers` (created stopped), `GET /servers?tags=
&name=&project=`, `GET|DELETE /servers/{id}`, `PATCH /servers/{id}/user_data/{key}` (text) and
`POST /servers/{id}/action` (`poweron`, `terminate`), and the Block Storage API's
`DELETE /block/v1/zones/{zone}/volumes/{id}` (refused while the volume is attached): each server
boots from a Block Storage volume that `terminate` and `DELETE` detach and leave. Errors are
`{"type": ..., "message": ...}`.
`GET /ip` (no key) echoes the caller's address, as `checkip` does.

A server boots for real when powered on: the fake reads its `cloud-init` user data (a
cloud-config), starts an sshd with the host key it carries and the login key it authorises on a
loopback address of its own (127.W.44.x) at `ssh_port`, and runs its `runcmd` lines (the kept key,
the boot guardian) as cloud-init would, with the login's home. Knobs: `out_of_stock` (commercial
types or zones) answers creation with Scaleway's `out_of_stock`; `sshd_down` boots servers whose
sshd never answers.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any, ClassVar

import attrs
import yaml
from aiohttp import web
from cloud_fakes import FakeCloud
from ssh_hosts import free_port, loopback

GIB = 1024**3
ZONES = ("fr-par-1", "fr-par-2", "nl-ams-1", "pl-waw-2")


def _type(gpus: int, card: str, memory: int, vcpus: int, ram_gb: int, hourly: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "monthly_price": round(hourly * 730, 2),
        "hourly_price": hourly,
        "alt_names": [],
        "ncpus": vcpus,
        "ram": ram_gb * GIB,
        "arch": "x86_64",
        "baremetal": False,
        "end_of_service": False,
        "gpu": gpus,
        "scratch_storage_max_size": None,
    }
    if gpus:
        row["gpu_info"] = {"gpu_manufacturer": "NVIDIA", "gpu_name": card, "gpu_memory": memory * GIB}
    return row


#: Each zone's commercial types as `GET /products/servers` lists them (EUR per hour).
TYPES: dict[str, dict[str, dict[str, Any]]] = {
    "fr-par-2": {
        "H100-1-80G": _type(1, "H100", 80, 24, 240, 2.73),
        "H100-2-80G": _type(2, "H100", 80, 48, 480, 5.46),
        "L4-1-24G": _type(1, "L4", 24, 8, 48, 0.75),
        "L4-2-24G": _type(2, "L4", 24, 16, 96, 1.5),
        "L40S-1-48G": _type(1, "L40S", 48, 8, 96, 1.4),
        "DEV1-S": _type(0, "", 0, 2, 2, 0.0088),
    },
    "nl-ams-1": {"L4-1-24G": _type(1, "L4", 24, 8, 48, 0.80)},
    "pl-waw-2": {
        "H100-1-80G": _type(1, "H100", 80, 24, 240, 2.9),
        "L4-1-24G": _type(1, "L4", 24, 8, 48, 0.78),
    },
}
CREATE_FIELDS = {
    "name", "dynamic_ip_required", "routed_ip_enabled", "commercial_type", "image", "volumes",
    "enable_ipv6", "public_ip", "public_ips", "boot_type", "organization", "project", "tags",
    "security_group", "placement_group", "admin_password_encryption_ssh_key_id", "protected",
}  # fmt: skip
_addresses = itertools.count(2)


def error(kind: str, message: str, status: int, **more: Any) -> web.Response:
    return web.json_response({"type": kind, "message": message, **more}, status=status)


def invalid(message: str) -> web.Response:
    return error("invalid_arguments", message, 400)


def not_found(resource: str) -> web.Response:
    return error("unknown_resource", f'"{resource}" not found', 404, resource=resource)


@attrs.define
class FakeScaleway(FakeCloud):
    secret_key: str
    project: str
    ssh_port: int = 0
    page_size: int = 2
    servers: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    groups: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: Each group's rules, by group id.
    rules: dict[str, list[dict[str, Any]]] = attrs.field(factory=dict)
    #: Block Storage volumes by id, each with the server it is attached to (None: detached).
    volumes: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: Each server's user data, by server id and key.
    user_data: dict[str, dict[str, str]] = attrs.field(factory=dict)
    #: Every create body received, accepted or not, in order, with its zone.
    creates: list[dict[str, Any]] = attrs.field(factory=list)
    terminated: list[str] = attrs.field(factory=list)
    out_of_stock: set[str] = attrs.field(factory=set)
    #: Every token a request came with, good or not.
    tokens_seen: list[str] = attrs.field(factory=list)
    #: Other secret keys of the project (an IAM key made for the guardians), accepted too.
    other_keys: set[str] = attrs.field(factory=set)

    NAME: ClassVar[str] = "Scaleway"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def echo_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ip"

    def start(self) -> FakeScaleway:
        self.ssh_port = free_port("127.0.0.1")
        return super().start()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        base = "/instance/v1/zones/{zone}"
        app.add_routes(
            [
                web.get("/ip", self._echo),
                web.get(base + "/products/servers", self._types),
                web.post(base + "/security_groups", self._add_group),
                web.get(base + "/security_groups", self._list_groups),
                web.post(base + "/security_groups/{id}/rules", self._add_rule),
                web.delete(base + "/security_groups/{id}", self._delete_group),
                web.post(base + "/servers", self._create),
                web.get(base + "/servers", self._list_servers),
                web.get(base + "/servers/{id}", self._get),
                web.delete(base + "/servers/{id}", self._delete),
                web.patch(base + "/servers/{id}/user_data/{key}", self._set_user_data),
                web.post(base + "/servers/{id}/action", self._action),
                web.get("/block/v1/zones/{zone}/volumes", self._list_volumes),
                web.get("/block/v1/zones/{zone}/volumes/{id}", self._get_volume),
                web.patch("/block/v1/zones/{zone}/volumes/{id}", self._update_volume),
                web.delete("/block/v1/zones/{zone}/volumes/{id}", self._delete_volume),
            ]
        )
        return app

    def check_nothing_left(self) -> None:
        assert not self.servers, f"servers left: {sorted(self.servers)}"
        assert not self.groups, f"security groups left: {sorted(self.groups)}"
        assert not self.volumes, f"block volumes left: {sorted(self.volumes)}"
        super().check_nothing_left()

    # -- auth, paging ------------------------------------------------------------------------------

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith(("/instance/", "/block/")):
            token = request.headers.get("X-Auth-Token", "")
            self.tokens_seen.append(token)
            if token != self.secret_key and token not in self.other_keys:
                return error("denied_authentication", "authentication is denied", 401, method="api_key")
            if request.match_info.get("zone") not in ZONES:
                return invalid(f"zone {request.match_info.get('zone')!r} is not a valid zone")
        return await handler(request)

    async def _echo(self, request: web.Request) -> web.Response:
        return web.Response(text=f"{request.remote}\n")

    def _page(self, request: web.Request, kind: str, rows: list[Any], keyed: bool = False) -> web.Response:
        """One page of `rows` (`page`, `per_page`), the total in `X-Total-Count` as Scaleway sends
        it; `keyed` rows are (name, row) pairs answered as an object (the product listing's)."""
        size = min(int(request.query.get("per_page") or 50), 100, self.page_size)
        page = int(request.query.get("page") or 1)
        chunk = rows[(page - 1) * size : page * size]
        body = dict(chunk) if keyed else chunk
        return web.json_response({kind: body}, headers={"X-Total-Count": str(len(rows))})

    # -- products, security groups -----------------------------------------------------------------

    async def _types(self, request: web.Request) -> web.Response:
        return self._page(
            request, "servers", sorted(TYPES.get(request.match_info["zone"], {}).items()), keyed=True
        )

    async def _add_group(self, request: web.Request) -> web.Response:
        body = await request.json()
        if not isinstance(body.get("description"), str) or not isinstance(body.get("stateful"), bool):
            return invalid("description and stateful are required")
        if body.get("project") != self.project:
            return error("permissions_denied", "insufficient permissions", 403)
        group_id = str(uuid.uuid4())
        row = {
            "id": group_id,
            "zone": request.match_info["zone"],
            "servers": [],
            **{k: body.get(k) for k in ("name", "description", "stateful", "project", "tags")},
            "inbound_default_policy": body.get("inbound_default_policy", "accept"),
            "outbound_default_policy": body.get("outbound_default_policy", "accept"),
        }
        self.groups[group_id], self.rules[group_id] = row, []
        return web.json_response({"security_group": row}, status=201)

    async def _list_groups(self, request: web.Request) -> web.Response:
        zone, name = request.match_info["zone"], request.query.get("name")
        rows = [g for g in self.groups.values() if g["zone"] == zone and (name is None or name in g["name"])]
        return self._page(request, "security_groups", rows)

    async def _add_rule(self, request: web.Request) -> web.Response:
        group = request.match_info["id"]
        if group not in self.groups:
            return not_found("instance_security_group")
        body = await request.json()
        needed = {"protocol", "direction", "action", "ip_range", "position", "editable"}
        if not needed <= set(body) or body["protocol"] not in ("TCP", "UDP", "ICMP", "ANY"):
            return invalid(f"a rule needs {sorted(needed)}")
        rule = {"id": str(uuid.uuid4()), **body}
        self.rules[group].append(rule)
        return web.json_response({"rule": rule}, status=201)

    async def _delete_group(self, request: web.Request) -> web.Response:
        group = request.match_info["id"]
        if group not in self.groups:
            return not_found("instance_security_group")
        if any(s["security_group"]["id"] == group for s in self.servers.values()):
            return error("precondition_failed", "group is in use. you cannot delete it.", 412)
        del self.groups[group], self.rules[group]
        return web.Response(status=204)

    # -- servers -----------------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.Response:
        zone, body = request.match_info["zone"], await request.json()
        self.creates.append({**body, "zone": zone})
        unknown = set(body) - CREATE_FIELDS
        kind = TYPES.get(zone, {}).get(str(body.get("commercial_type")))
        if unknown or kind is None or not body.get("image") or body.get("project") != self.project:
            return invalid(f"bad server request: unknown {sorted(unknown)} or type, image, project")
        if body.get("security_group") not in self.groups:
            return not_found("instance_security_group")
        if {body["commercial_type"], zone} & self.out_of_stock:
            return error("out_of_stock", "server is out of stock", 409, resource="server")
        server_id, volume_id = str(uuid.uuid4()), str(uuid.uuid4())
        group = self.groups[body["security_group"]]
        self.volumes[volume_id] = {
            "id": volume_id, "zone": zone, "server": server_id, "name": f"vol-{body['name']}",
            "tags": [], "project": self.project, "created_at": "2026-11-29T10:00:00+00:00",
        }
        boot = {"id": volume_id, "volume_type": "sbs_volume", "boot": True, "zone": zone, "size": 20 * GIB}
        row = {
            "id": server_id,
            "name": body["name"],
            "hostname": body["name"],
            "organization": self.project,
            "project": self.project,
            "commercial_type": body["commercial_type"],
            "creation_date": "2026-11-29T10:00:00+00:00",
            "dynamic_ip_required": body.get("dynamic_ip_required", True),
            "image": {"id": str(uuid.uuid4()), "name": body["image"]},
            "tags": body.get("tags", []),
            "state": "stopped",
            "zone": zone,
            "protected": False,
            "public_ip": None,
            "public_ips": [],
            "private_ip": None,
            "security_group": {"id": group["id"], "name": group["name"]},
            "volumes": {"0": boot},
            "allowed_actions": ["poweron", "backup"],
        }
        self.servers[server_id] = row
        return web.json_response({"server": row}, status=201)

    async def _list_servers(self, request: web.Request) -> web.Response:
        zone, query = request.match_info["zone"], request.query
        rows = [s for s in self.servers.values() if s["zone"] == zone]
        if query.get("tags"):
            rows = [s for s in rows if set(query["tags"].split(",")) <= set(s["tags"])]
        if query.get("name"):
            rows = [s for s in rows if query["name"] in s["name"]]
        if query.get("project"):
            rows = [s for s in rows if s["project"] == query["project"]]
        return self._page(request, "servers", rows)

    async def _get(self, request: web.Request) -> web.Response:
        row = self.servers.get(request.match_info["id"])
        return not_found("instance_server") if row is None else web.json_response({"server": row})

    async def _delete(self, request: web.Request) -> web.Response:
        row = self.servers.get(request.match_info["id"])
        if row is None:
            return not_found("instance_server")
        if row["state"] != "stopped":
            return error("precondition_failed", "server should be stopped", 400)
        self._remove_server(row["id"])
        return web.Response(status=204)

    async def _set_user_data(self, request: web.Request) -> web.Response:
        if request.match_info["id"] not in self.servers:
            return not_found("instance_server")
        if request.content_type != "text/plain":
            return invalid("user data is sent as text/plain")
        self.user_data.setdefault(request.match_info["id"], {})[
            request.match_info["key"]
        ] = await request.text()
        return web.Response(status=204)

    async def _action(self, request: web.Request) -> web.Response:
        row = self.servers.get(request.match_info["id"])
        if row is None:
            return not_found("instance_server")
        action = (await request.json()).get("action")
        if action == "poweron" and row["state"] == "stopped":
            row["state"] = "starting"
            await asyncio.to_thread(self._boot, row)
        elif action == "terminate" and row["state"] != "stopped":
            self._remove_server(row["id"])
            await self.power_off(row["id"])
            self.terminated.append(row["id"])
        else:
            return error("precondition_failed", f"{action} is not allowed on a {row['state']} server", 400)
        task = {"id": str(uuid.uuid4()), "description": action, "status": "pending", "href_from": ""}
        return web.json_response({"task": task}, status=202)

    def _remove_server(self, server_id: str) -> None:
        """The server gone; its Block Storage volumes stay, detached, as Scaleway leaves them."""
        del self.servers[server_id]
        for volume in self.volumes.values():
            if volume["server"] == server_id:
                volume["server"] = None
                volume["last_detached_at"] = "2026-11-29T11:00:00+00:00"

    def _volume_json(self, volume: dict[str, Any]) -> dict[str, Any]:
        """A volume as Block Storage v1 answers it: `in_use` with a reference to its server while
        attached, `available` with none once detached."""
        server = volume.get("server")
        references = [] if server is None else [{
            "id": f"ref-{volume['id']}", "product_resource_type": "instance_server",
            "product_resource_id": server, "type": "exclusive", "status": "attached",
        }]  # fmt: skip
        return {
            "id": volume["id"], "name": volume.get("name", ""), "type": "sbs_5k", "size": 20 * GIB,
            "project_id": volume.get("project", self.project), "zone": volume["zone"],
            "tags": volume.get("tags", []), "references": references,
            "status": "available" if server is None else "in_use",
            "created_at": volume.get("created_at"), "last_detached_at": volume.get("last_detached_at"),
        }  # fmt: skip

    async def _list_volumes(self, request: web.Request) -> web.Response:
        """`GET /block/v1/zones/{zone}/volumes`: `tags` (every one given), `name`, `project_id`
        filters; `page`/`page_size` pages, with `total_count` in the body as Block Storage sends it."""
        zone, query = request.match_info["zone"], request.query
        rows = [self._volume_json(v) for v in self.volumes.values() if v["zone"] == zone]
        if query.getall("tags", []):
            rows = [v for v in rows if set(query.getall("tags")) <= set(v["tags"])]
        if query.get("name"):
            rows = [v for v in rows if query["name"] in v["name"]]
        if query.get("project_id"):
            rows = [v for v in rows if v["project_id"] == query["project_id"]]
        size = min(int(query.get("page_size") or 50), 100, self.page_size)
        page = int(query.get("page") or 1)
        return web.json_response({"volumes": rows[(page - 1) * size : page * size], "total_count": len(rows)})

    async def _get_volume(self, request: web.Request) -> web.Response:
        volume = self.volumes.get(request.match_info["id"])
        return not_found("volume") if volume is None else web.json_response(self._volume_json(volume))

    async def _update_volume(self, request: web.Request) -> web.Response:
        volume = self.volumes.get(request.match_info["id"])
        if volume is None:
            return not_found("volume")
        body = await request.json()
        unknown = set(body) - {"name", "size", "tags", "perf_iops"}
        if unknown:
            return invalid(f"unknown fields {sorted(unknown)}")
        volume.update({k: body[k] for k in ("name", "tags") if body.get(k) is not None})
        return web.json_response(self._volume_json(volume))

    async def _delete_volume(self, request: web.Request) -> web.Response:
        volume = self.volumes.get(request.match_info["id"])
        if volume is None:
            return not_found("volume")
        if volume["server"] is not None:
            return error("precondition_failed", "volume is in use", 412)
        del self.volumes[volume["id"]]
        return web.Response(status=204)

    # -- machines ----------------------------------------------------------------------------------

    def _boot(self, row: dict[str, Any]) -> None:
        """Power the server on: its sshd from its cloud-config, its `runcmd` run, an address."""
        address = loopback(44, next(_addresses))
        row.update(
            state="running",
            public_ip={"id": str(uuid.uuid4()), "address": address, "dynamic": True, "family": "inet"},
            private_ip=address,
        )
        row["public_ips"] = [row["public_ip"]]
        config = yaml.safe_load(self.user_data.get(row["id"], {}).get("cloud-init", "") or "{}") or {}
        host_key = (config.get("ssh_keys") or {}).get("ed25519_private")
        logins = config.get("ssh_authorized_keys") or []
        if not host_key or not logins:
            return  # no cloud-config: the image's sshd, with keys the pool never pins
        server = self.boot_machine(row["id"], address, self.ssh_port, host_key, logins[0])
        # runcmd as cloud-init runs it (as root; here as this user, with the login's home).
        script = "\n".join(argv[-1] for argv in config.get("runcmd") or [])
        self.run_boot_lines(row["id"], server, script, {})
