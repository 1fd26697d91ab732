"""A Compute Engine API (v1, REST) on loopback whose VMs are real OpenSSH servers, each with a
metadata server of its own.

It answers what `google-cloud-compute`'s REST transport sends, as Compute Engine documents it,
under `/compute/v1/projects/{project}`: `zones` (list), `zones/{z}/machineTypes` and
`zones/{z}/acceleratorTypes` (list), `zones/{z}/instances` (insert, get, list with a label
filter, delete), `aggregated/instances`, `zones/{z}/operations/{op}` and `global/operations/{op}`
(get, wait), and `global/firewalls` (insert, list, delete). Bodies and answers use Compute
Engine's JSON names (`machineType`, `networkInterfaces[].accessConfigs[].natIP`, ...); errors are
`{"error": {"code", "message", "errors": [{"reason", ...}]}}`. An insert answers a RUNNING
operation that its wait finishes: with `ZONE_RESOURCE_POOL_EXHAUSTED` (HTTP 503 in the
operation) where the test says there is no capacity.

Every call needs a bearer token: a self-signed JWT of the test's service account (what the
client sends from a service account key file found through `GOOGLE_APPLICATION_CREDENTIALS`),
checked against its public key, or a token a VM's metadata server handed out.

A VM boots for real: an sshd on a loopback address of its own (127.0.5.x) at `ssh_port`, with
the host key its `startup-script` exports and the login key it authorises; the script's guardian
line runs as the VM would run it. Its metadata server listens on the VM's own address
(`GCE_METADATA_HOST`, set in the VM's logins and its boot lines) and answers `instance/name`,
`instance/zone`, `project/project-id`, `instance/preempted` and the default service account's
token, each only with `Metadata-Flavor: Google`. Knobs: `no_capacity` (zones, machine types, or
"spot" / "on-demand"), `sshd_down`, `delete_errors` (that many deletes fail with a 500),
`preempt(name)` (the VM's `instance/preempted` turns TRUE).
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, exported_host_key
from gcp_world import (
    ACCELERATORS,
    INSERT_FIELDS,
    MACHINE_TYPES,
    PROJECT,
    ZONES,
    error,
    login_key_of,
    matches,
)
from ssh_hosts import free_port, loopback

_addresses = itertools.count(2)


@attrs.define
class FakeGCP(FakeCloud):
    #: The service account whose self-signed JWTs the API accepts, and its public key (PEM).
    account_email: str
    account_public_key: str
    ssh_port: int = 0
    metadata_port: int = 0
    instances: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # "zone/name" -> instance
    firewalls: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    operations: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: Every insert body received, accepted or not, in order.
    inserts: list[dict[str, Any]] = attrs.field(factory=list)
    deleted: list[str] = attrs.field(factory=list)
    #: Firewall rules created, by name (kept after their deletion, to read their ranges).
    firewall_log: list[dict[str, Any]] = attrs.field(factory=list)
    no_capacity: set[str] = attrs.field(factory=set)
    delete_errors: int = 0
    preempted: set[str] = attrs.field(factory=set)
    #: A host key the VMs answer with instead of the one their script installs.
    impostor_key: str | None = None
    #: Tokens the VMs' metadata servers handed out.
    vm_tokens: set[str] = attrs.field(factory=set)
    #: (instance, path) of every metadata request, in order.
    metadata_asked: list[tuple[str, str]] = attrs.field(factory=list)
    _sites: dict[str, web.TCPSite] = attrs.field(factory=dict)

    NAME: ClassVar[str] = "GCP"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def live(self) -> list[str]:
        return sorted(self.instances)

    @staticmethod
    def key(instance_id: str) -> str:
        """The fake's key (`zone/name`) of the provider's instance id (`zone/name/number`)."""
        return "/".join(instance_id.split("/")[:2])

    def preempt(self, instance_id: str) -> None:
        """Compute Engine starts taking this spot VM back: its `instance/preempted` is TRUE."""
        self.preempted.add(self.key(instance_id))

    def place(self, zone: str, name: str, labels: dict[str, str], *, spot: bool = False) -> str:
        """A VM as a crashed client leaves it (no sshd behind it): its key."""
        key = f"{zone}/{name}"
        scheduling = {"provisioningModel": "SPOT"} if spot else {}
        self.instances[key] = {
            "kind": "compute#instance",
            "id": str(uuid.uuid4().int >> 64),
            "name": name,
            "zone": self._link(f"zones/{zone}"),
            "machineType": self._link(f"zones/{zone}/machineTypes/g2-standard-4"),
            "status": "RUNNING",
            "labels": labels,
            "scheduling": scheduling,
            "creationTimestamp": "2026-11-25T10:00:00.000-00:00",
            "_address": "",
        }
        return key

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> FakeGCP:
        self.ssh_port = free_port("127.0.0.1")
        self.metadata_port = free_port("127.0.0.1")
        return super().start()

    def app(self) -> web.Application:
        root = "/compute/v1/projects/{project}"
        app = web.Application(middlewares=[self._auth])
        app.add_routes(
            [
                web.get(f"{root}/zones", self._zones),
                web.get(f"{root}/zones/{{zone}}/machineTypes", self._machine_types),
                web.get(f"{root}/zones/{{zone}}/acceleratorTypes", self._accelerator_types),
                web.post(f"{root}/zones/{{zone}}/instances", self._insert),
                web.get(f"{root}/zones/{{zone}}/instances", self._list),
                web.get(f"{root}/zones/{{zone}}/instances/{{name}}", self._get),
                web.delete(f"{root}/zones/{{zone}}/instances/{{name}}", self._delete),
                web.get(f"{root}/aggregated/instances", self._aggregated),
                web.get(f"{root}/zones/{{zone}}/operations/{{op}}", self._operation),
                web.post(f"{root}/zones/{{zone}}/operations/{{op}}/wait", self._operation),
                web.get(f"{root}/global/operations/{{op}}", self._operation),
                web.post(f"{root}/global/operations/{{op}}/wait", self._operation),
                web.post(f"{root}/global/firewalls", self._insert_firewall),
                web.get(f"{root}/global/firewalls", self._list_firewalls),
                web.delete(f"{root}/global/firewalls/{{name}}", self._delete_firewall),
                web.get("/computeMetadata/v1/{path:.*}", self._metadata),
            ]
        )
        return app

    def stop(self) -> None:
        if self._loop is not None:
            for site in list(self._sites.values()):
                asyncio.run_coroutine_threadsafe(site.stop(), self._loop).result(10)
        self._sites.clear()
        super().stop()

    def check_nothing_left(self) -> None:
        assert not self.instances, f"VMs left running: {self.live()}"
        assert not self.firewalls, f"firewall rules left behind: {sorted(self.firewalls)}"
        super().check_nothing_left()

    # -- auth --------------------------------------------------------------------------------------

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/computeMetadata/"):
            return await handler(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in self.vm_tokens and not self._signed_by_account(token):
            return error(401, "authError", "Request had invalid authentication credentials.")
        if request.match_info.get("project") != PROJECT:
            return error(
                403, "forbidden", f"Permission denied on project {request.match_info.get('project')}"
            )
        return await handler(request)

    def _signed_by_account(self, token: str) -> bool:
        from google.auth import jwt

        try:
            claims = jwt.decode(token, certs=self.account_public_key, verify=True, audience=None)
        except (ValueError, TypeError):
            return False
        return claims.get("iss") == self.account_email

    # -- catalog -----------------------------------------------------------------------------------

    def _zone(self, request: web.Request) -> str | None:
        zone = request.match_info["zone"]
        return zone if zone in ZONES else None

    def _link(self, path: str) -> str:
        return f"{self.url}/compute/v1/projects/{PROJECT}/{path}"

    async def _zones(self, request: web.Request) -> web.Response:
        items = [
            {"name": z, "region": self._link(f"regions/{r}"), "status": "UP", "kind": "compute#zone"}
            for z, r in ZONES.items()
        ]
        return web.json_response({"kind": "compute#zoneList", "items": items})

    async def _machine_types(self, request: web.Request) -> web.Response:
        zone = self._zone(request)
        if zone is None:
            return error(404, "notFound", f"The resource 'zones/{request.match_info['zone']}' was not found")
        items = [
            {"name": n, "guestCpus": c, "memoryMb": m * 1024, "zone": zone, "kind": "compute#machineType"}
            for n, c, m in MACHINE_TYPES
        ]
        return web.json_response({"kind": "compute#machineTypeList", "items": items})

    async def _accelerator_types(self, request: web.Request) -> web.Response:
        zone = self._zone(request)
        if zone is None:
            return error(404, "notFound", f"The resource 'zones/{request.match_info['zone']}' was not found")
        items = [
            {"name": n, "zone": zone, "maximumCardsPerInstance": 8, "kind": "compute#acceleratorType"}
            for n in ACCELERATORS[zone]
        ]
        return web.json_response({"kind": "compute#acceleratorTypeList", "items": items})

    # -- operations --------------------------------------------------------------------------------

    def _operation_row(
        self, kind: str, target: str, zone: str | None, failure: tuple[str, str] | None
    ) -> dict:
        name = f"operation-{uuid.uuid4().hex[:16]}"
        row: dict[str, Any] = {
            "kind": "compute#operation",
            "id": str(uuid.uuid4().int >> 64),
            "name": name,
            "operationType": kind,
            "targetLink": target,
            "status": "RUNNING",
            "progress": 0,
            "insertTime": "2026-01-01T00:00:00.000-00:00",
        }
        if zone is not None:
            row["zone"] = self._link(f"zones/{zone}")
        if failure is not None:
            code, message = failure
            row["_failure"] = {
                "error": {"errors": [{"code": code, "message": message}]},
                "httpErrorStatusCode": 503,
                "httpErrorMessage": "SERVICE UNAVAILABLE",
            }
        self.operations[name] = row
        return row

    async def _operation(self, request: web.Request) -> web.Response:
        row = self.operations.get(request.match_info["op"])
        if row is None:
            return error(
                404, "notFound", f"The resource 'operations/{request.match_info['op']}' was not found"
            )
        if request.method == "POST" and row["status"] != "DONE":  # wait: it finishes now
            row.update(row.pop("_failure", {}), status="DONE", progress=100, endTime="2026-01-01T00:00:01Z")
        return self._public(row)

    def _public(self, row: dict[str, Any]) -> web.Response:
        return web.json_response(self._strip(row))

    # -- instances ---------------------------------------------------------------------------------

    def _check(self, zone: str, body: Any) -> str:
        """The machine type of a valid insert body (`Invalid` says what is wrong)."""
        expect(isinstance(body, dict), "the body must be a JSON object")
        unknown = set(body) - INSERT_FIELDS
        expect(not unknown, f"Invalid value for field 'resource': unknown fields {sorted(unknown)}")
        expect(isinstance(body.get("name"), str) and body["name"], "Invalid value for field 'resource.name'")
        machine = str(body.get("machineType", "")).rsplit("/", 1)[-1]
        expect(
            machine in {m[0] for m in MACHINE_TYPES},
            f"Invalid value for field 'resource.machineType': {machine}",
        )
        for acc in body.get("guestAccelerators", []):
            name = str(acc.get("acceleratorType", "")).rsplit("/", 1)[-1]
            expect(name in ACCELERATORS[zone], f"Accelerator type {name} is not available in {zone}")
            expect(int(acc.get("acceleratorCount", 0)) > 0, "acceleratorCount must be positive")
        scheduling = body.get("scheduling", {})
        if scheduling.get("provisioningModel") == "SPOT":
            expect(
                scheduling.get("instanceTerminationAction") in ("STOP", "DELETE"),
                "Spot VMs need instanceTerminationAction STOP or DELETE",
            )
        if body.get("guestAccelerators") or machine.startswith(("a2-", "a3-", "g2-")):
            expect(
                scheduling.get("onHostMaintenance") == "TERMINATE",
                "Instances with guest accelerators do not support live migration.",
            )
        expect(any(d.get("boot") for d in body.get("disks", [])), "a boot disk is required")
        return machine

    async def _insert(self, request: web.Request) -> web.Response:
        zone = self._zone(request)
        if zone is None:
            return error(404, "notFound", f"The resource 'zones/{request.match_info['zone']}' was not found")
        body = await request.json()
        self.inserts.append(body)
        try:
            machine = self._check(zone, body)
        except Invalid as exc:
            return error(400, "invalid", str(exc))
        key = f"{zone}/{body['name']}"
        if key in self.instances:
            return error(409, "alreadyExists", f"The resource '{key}' already exists")
        spot = body.get("scheduling", {}).get("provisioningModel") == "SPOT"
        target = self._link(f"zones/{zone}/instances/{body['name']}")
        if {zone, machine, "spot" if spot else "on-demand"} & self.no_capacity:
            message = (
                f"The zone 'projects/{PROJECT}/zones/{zone}' does not have enough resources available "
                "to fulfill the request.  Try a different zone, or try again later."
            )
            failure = ("ZONE_RESOURCE_POOL_EXHAUSTED", message)
            return self._public(self._operation_row("insert", target, zone, failure))
        address = loopback(5, next(_addresses))
        await asyncio.to_thread(self._boot, key, zone, body, address)
        site = web.TCPSite(self._runner, address, self.metadata_port)  # type: ignore[arg-type]
        await site.start()
        self._sites[key] = site
        done = self._operation_row("insert", target, zone, None)
        done["targetId"] = self.instances[key]["id"]
        return self._public(done)

    async def _get(self, request: web.Request) -> web.Response:
        key = f"{request.match_info['zone']}/{request.match_info['name']}"
        row = self.instances.get(key)
        if row is None:
            return error(404, "notFound", f"The resource 'projects/{PROJECT}/zones/{key}' was not found")
        return self._public(row)

    async def _list(self, request: web.Request) -> web.Response:
        zone = request.match_info["zone"]
        rows = [
            r
            for k, r in self.instances.items()
            if k.startswith(f"{zone}/") and matches(r, request.query.get("filter", ""))
        ]
        return web.json_response({"kind": "compute#instanceList", "items": [self._strip(r) for r in rows]})

    async def _aggregated(self, request: web.Request) -> web.Response:
        items: dict[str, Any] = {}
        for zone in ZONES:
            rows = [
                self._strip(r)
                for k, r in self.instances.items()
                if k.startswith(f"{zone}/") and matches(r, request.query.get("filter", ""))
            ]
            items[f"zones/{zone}"] = (
                {"instances": rows}
                if rows
                else {"warning": {"code": "NO_RESULTS_ON_PAGE", "message": "There are no results for scope"}}
            )
        return web.json_response({"kind": "compute#instanceAggregatedList", "items": items})

    @staticmethod
    def _strip(row: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if not k.startswith("_")}

    async def _delete(self, request: web.Request) -> web.Response:
        zone, name = request.match_info["zone"], request.match_info["name"]
        key = f"{zone}/{name}"
        if self.delete_errors > 0:
            self.delete_errors -= 1
            return error(500, "backendError", "Internal error. Please try again or contact Google Support.")
        if self.instances.pop(key, None) is None:
            return error(404, "notFound", f"The resource 'projects/{PROJECT}/zones/{key}' was not found")
        site = self._sites.pop(key, None)
        if site is not None:
            await site.stop()
        await self.power_off(key)
        self.preempted.discard(key)  # a later VM of the same name is a new one, not being taken back
        self.deleted.append(key)
        return self._public(self._operation_row("delete", self._link(f"zones/{key}"), zone, None))

    # -- firewall rules ----------------------------------------------------------------------------

    async def _insert_firewall(self, request: web.Request) -> web.Response:
        body = await request.json()
        allowed = body.get("allowed") or []
        if (
            not body.get("name")
            or not body.get("sourceRanges")
            or not all(a.get("IPProtocol") for a in allowed)
        ):
            return error(
                400, "invalid", "Invalid value for field 'resource': name, sourceRanges, allowed[].IPProtocol"
            )
        if body["name"] in self.firewalls:
            return error(
                409, "alreadyExists", f"The resource 'global/firewalls/{body['name']}' already exists"
            )
        self.firewalls[body["name"]] = body
        self.firewall_log.append(body)
        return self._public(
            self._operation_row("insert", self._link(f"global/firewalls/{body['name']}"), None, None)
        )

    async def _list_firewalls(self, request: web.Request) -> web.Response:
        rows = [r for r in self.firewalls.values() if matches(r, request.query.get("filter", ""))]
        return web.json_response({"kind": "compute#firewallList", "items": rows})

    async def _delete_firewall(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if self.firewalls.pop(name, None) is None:
            return error(
                404, "notFound", f"The resource 'projects/{PROJECT}/global/firewalls/{name}' was not found"
            )
        return self._public(self._operation_row("delete", self._link(f"global/firewalls/{name}"), None, None))

    # -- the VMs' metadata servers -----------------------------------------------------------------

    async def _metadata(self, request: web.Request) -> web.Response:
        if request.headers.get("Metadata-Flavor") != "Google":
            return web.Response(status=403, text="Missing Metadata-Flavor:Google header.")
        address = request.transport.get_extra_info("sockname")[0] if request.transport else ""
        key = next((k for k, r in self.instances.items() if r["_address"] == address), None)
        if key is None:
            return web.Response(status=404, text="not found")
        path = request.match_info["path"]
        self.metadata_asked.append((key, path))
        zone, name = key.split("/")
        if path == "instance/service-accounts/default/token":
            token = f"ya29.vm-{uuid.uuid4().hex}"
            self.vm_tokens.add(token)
            return web.json_response({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
        answers = {
            "instance/name": name,
            "instance/zone": f"projects/123456789/zones/{zone}",
            "project/project-id": PROJECT,
            "instance/preempted": "TRUE" if key in self.preempted else "FALSE",
        }
        if path not in answers:
            return web.Response(status=404, text="not found")
        return web.Response(text=answers[path], content_type="application/text")

    # -- VMs ---------------------------------------------------------------------------------------

    def _boot(self, key: str, zone: str, body: dict[str, Any], address: str) -> None:
        items = {i["key"]: i.get("value", "") for i in body.get("metadata", {}).get("items", [])}
        script = items.get("startup-script", "")
        self.instances[key] = {
            "kind": "compute#instance",
            "id": str(uuid.uuid4().int >> 64),
            "name": body["name"],
            "zone": self._link(f"zones/{zone}"),
            "machineType": self._link(f"zones/{zone}/{body['machineType']}"),
            "status": "RUNNING",
            "labels": body.get("labels", {}),
            "tags": body.get("tags", {}),
            "scheduling": body.get("scheduling", {}),
            "guestAccelerators": body.get("guestAccelerators", []),
            "metadata": body.get("metadata", {}),
            "serviceAccounts": body.get("serviceAccounts", []),
            "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000-00:00", time.gmtime()),
            "networkInterfaces": [
                {
                    "name": "nic0",
                    "networkIP": address,
                    "accessConfigs": [{"name": "External NAT", "type": "ONE_TO_ONE_NAT", "natIP": address}],
                }
            ],
            "_address": address,
        }
        host_key = self.impostor_key or exported_host_key(script)
        if host_key is None:
            self.instances[key]["status"] = "TERMINATED"  # the script found no key and failed
            return
        env = {"GCE_METADATA_HOST": f"{address}:{self.metadata_port}"}
        folder = f"{body['name']}-{self.instances[key]['id']}"  # a name comes back once its VM is gone
        server = self.boot_machine(folder, address, self.ssh_port, host_key, login_key_of(script), env)
        self.machines[key] = self.machines.pop(folder)
        self.run_boot_lines(key, server, script, env, credentials=False)
