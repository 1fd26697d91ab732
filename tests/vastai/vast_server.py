"""A stand-in for Vast.ai's REST API on loopback whose instances are real OpenSSH servers.

It answers the endpoints the provider calls through the `vastai-sdk` (POST /api/v0/bundles/,
PUT /api/v0/asks/{id}/, GET and DELETE /api/v0/instances/{id}/, and the paged list GET
/api/v1/instances/), checks the `Authorization: Bearer` key as Vast does (401 otherwise), and
keeps every request it got (a GET's query parameters in place of a body). Creating an instance
does what a Vast host does with our request: it takes the host key from the instance's
environment (`SKYWARD_SSH_HOST_KEY`) and the login key from the onstart script, and starts an
sshd (`start_machine`) on a fresh loopback address (127.0.2.x) and free port, reported as the
direct address Vast reports (`public_ipaddr`, `ports["22/tcp"]`). Destroying it stops the sshd.

Knobs for the tests: `taken` (offer ids answered as rented by someone else), `foreign_host_key`
(machines answer with a key of their own, as a tampered host would), `lost_replies` (offer ids
whose rent succeeds but is answered with a server error, so the caller never learns the instance
id: the orphan `leftovers` must find), `sshd_down` (machines whose sshd never answers; the
onstart's boot guardian still starts, its answer kept in `boot_guardians`).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import shlex
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import asyncssh
import attrs
from ssh_hosts import SSHServer, free_port, loopback, start_machine


def offer(id: int, machine: int, gpu: str = "RTX 4090", *, gpus: int = 1, price: float = 0.40,
          min_bid: float = 0.20, country: str = "US", **extra: Any) -> dict[str, Any]:
    """An offer row with the fields Vast's search returns that the provider reads or filters on."""
    row = {
        "id": id, "machine_id": machine, "gpu_name": gpu, "num_gpus": gpus, "gpu_ram": 24564,
        "cpu_cores_effective": 16.0, "cpu_ram": 64000, "disk_space": 500.0, "dph_total": price,
        "min_bid": min_bid, "reliability": 0.99, "verified": True, "rentable": True, "rented": False,
        "external": False, "geolocation": f"Somewhere, {country}", "direct_port_count": 10,
    }
    row.update(extra)
    return row


_OPS: dict[str, Any] = {
    "eq": lambda a, b: a == b, "neq": lambda a, b: a != b, "gte": lambda a, b: a >= b,
    "lte": lambda a, b: a <= b, "gt": lambda a, b: a > b, "lt": lambda a, b: a < b,
    "in": lambda a, b: a in b, "notin": lambda a, b: a not in b,
}


def _matches(value: Any, condition: dict[str, Any], field: str) -> bool:
    for op, want in condition.items():
        if field == "geolocation" and op == "in":
            if str(value)[-2:] not in want:
                return False
            continue
        if not _OPS[op](value, want):
            return False
    return True


@attrs.define
class FakeInstance:
    id: int
    offer: dict[str, Any]
    request: dict[str, Any]
    address: str
    port: int
    status: str = "loading"
    server: SSHServer | None = None
    #: What Vast says about the status (`status_msg`): why an instance was stopped, say.
    status_msg: str = ""
    #: The instance-scoped key Vast puts in the container's environment (`CONTAINER_API_KEY`).
    container_api_key: str = attrs.field(factory=lambda: f"container-{time.monotonic_ns()}")

    def row(self) -> dict[str, Any]:
        env = self.request.get("env") or {}
        running = self.status == "running"
        return {
            "id": self.id, "machine_id": self.offer["machine_id"], "label": self.request.get("label"),
            "actual_status": self.status, "intended_status": "running", "cur_state": self.status,
            "status_msg": self.status_msg, "start_date": time.time(),
            "extra_env": [[k, v] for k, v in env.items()],
            "gpu_name": self.offer["gpu_name"], "num_gpus": self.offer["num_gpus"],
            "image_runtype": self.request.get("runtype"), "dph_total": self.offer["dph_total"],
            "public_ipaddr": self.address if running else None,
            "ports": {"22/tcp": [{"HostIp": "0.0.0.0", "HostPort": str(self.port)}]} if running else {},
            "ssh_host": "ssh4.vast.invalid", "ssh_port": 40000 + self.id,
        }


class FakeVast:
    def __init__(self, folder: Path, api_key: str, offers: list[dict[str, Any]]) -> None:
        self.folder = folder
        self.api_key = api_key
        self.offers = offers
        self.taken: set[int] = set()
        self.foreign_host_key = False
        self.lost_replies: set[int] = set()
        #: Boot machines whose sshd never answers (the pool never logs in).
        self.sshd_down = False
        #: What starting each instance's boot guardian answered (the onstart's guardian line), by id.
        self.boot_guardians: dict[int, str] = {}
        self.instances: dict[int, FakeInstance] = {}
        self.destroyed: list[int] = []
        self.requests: list[tuple[str, str, dict[str, Any], str]] = []
        self._next_id = 1000
        self._next_address = 2
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeVast:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        for instance in list(self.instances.values()):
            if instance.server is not None:
                instance.server.stop()

    def add_instance(self, offer_id: int, label: str | None = None, status: str = "running") -> FakeInstance:
        """An instance rented outside the provider, with no machine behind it (for API-only tests)."""
        with self._lock:
            self._next_id += 1
            row = next(o for o in self.offers if o["id"] == offer_id)
            request = {"label": label} if label is not None else {}
            instance = FakeInstance(self._next_id, row, request, loopback(2, 250), 22, status=status)
            self.instances[instance.id] = instance
        return instance

    def authorised(self, key: str, method: str, route: tuple[str, ...]) -> bool:
        # The list (`GET /api/v1/instances/`, route ("instances",)) takes the account key only.
        """The account's key opens everything; an instance's own key, only that instance."""
        if key == f"Bearer {self.api_key}":
            return True
        if len(route) == 2 and route[0] == "instances" and method in ("GET", "PUT", "DELETE"):
            instance = self.instances.get(int(route[1]))
            return instance is not None and key == f"Bearer {instance.container_api_key}"
        return False

    def outbid(self, instance_id: int) -> None:
        """A higher bid takes an interruptible instance's machine: Vast stops its container (the
        sshd and everything under it) and reports it `stopped`, though its renter wants it running."""
        instance = self.instances[instance_id]
        assert instance.request.get("price") is not None, "only a bid (interruptible) instance is outbid"
        instance.status, instance.status_msg = "stopped", "outbid: a higher bid has priority on this machine"
        server, instance.server = instance.server, None  # stopped here, once: destroying it later finds none
        if server is not None:
            server.stop()

    def stop_instance(self, instance_id: int) -> tuple[int, dict[str, Any]]:
        instance = self.instances.get(instance_id)
        if instance is None:
            return 404, {"success": False, "error": "no_such_instance", "msg": "Instance not found."}
        instance.status = "stopped"
        return 200, {"success": True}

    @property
    def live(self) -> list[FakeInstance]:
        return list(self.instances.values())

    @property
    def created(self) -> list[dict[str, Any]]:
        return [body for method, path, body, _ in self.requests if method == "PUT" and "/asks/" in path]

    # -- the API -------------------------------------------------------------------------------------

    def search(self, q: dict[str, Any]) -> dict[str, Any]:
        rented = {i.offer["id"] for i in self.instances.values()}
        skip = {"order", "type", "limit", "allocated_storage", "disable_bundling"}
        found = []
        for row in self.offers:
            row = {**row, "rented": row["id"] in rented}
            if q.get("type") == "bid":
                row["dph_total"] = row["min_bid"]
            if all(_matches(row.get(f), cond, f) for f, cond in q.items() if f not in skip):
                found.append(row)
        found.sort(key=lambda r: r["dph_total"])
        return {"offers": found[: int(q.get("limit") or len(found))]}

    def create(self, offer_id: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            row = next((o for o in self.offers if o["id"] == offer_id), None)
            rented = any(i.offer["id"] == offer_id for i in self.instances.values())
            if row is None or rented or offer_id in self.taken:
                return 400, {
                    "success": False, "error": "no_such_ask",
                    "msg": f"Instance type {offer_id} is no longer available.",
                }
            self._next_id += 1
            address = loopback(2, self._next_address)
            self._next_address += 1
            instance = FakeInstance(self._next_id, row, body, address, free_port(address))
            self.instances[instance.id] = instance
        threading.Thread(target=self._boot, args=(instance,), daemon=True).start()
        if offer_id in self.lost_replies:  # rented, but the answer with its id never arrives
            return 500, {"success": False, "error": "internal_error", "msg": "Internal server error."}
        return 200, {"success": True, "new_contract": instance.id}

    def list_instances(self, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """`GET /api/v1/instances/`: the account's instances, filtered, ordered and paged as Vast
        does. `select_filters` and `order_by` are JSON (`{"label": {"eq": ...}}`, `[{"col", "dir"}]`);
        a page holds `limit` rows, and `next_token` (sent back as `after_token`) names the next one,
        absent on the last page."""
        try:
            filters = json.loads(query.get("select_filters") or "{}")
            order = json.loads(query.get("order_by") or "[]") or [{"col": "id", "dir": "asc"}]
            limit = int(query.get("limit") or 25)
            token = query.get("after_token")
            start = int(base64.urlsafe_b64decode(token).decode()) if token else 0
        except (ValueError, TypeError, KeyError, binascii.Error):
            return 400, {"success": False, "error": "invalid_args", "msg": f"bad query: {query}"}
        if limit < 1:
            return 400, {"success": False, "error": "invalid_args", "msg": "limit must be positive"}
        with self._lock:
            rows = [i.row() for i in self.instances.values()]
        rows = [r for r in rows if all(_matches(r.get(f), cond, f) for f, cond in filters.items())]
        for sort in reversed(order):  # stable sorts, last key first: the first key decides
            col = sort["col"]
            descending = sort.get("dir") == "desc"
            rows.sort(key=lambda r, col=col: (r.get(col) is None, r.get(col)), reverse=descending)
        page = rows[start : start + limit]
        more = start + limit < len(rows)
        labels: dict[str, int] = {}
        for r in rows:
            labels[str(r.get("label") or "")] = labels.get(str(r.get("label") or ""), 0) + 1
        return 200, {
            "instances": page,
            "next_token": base64.urlsafe_b64encode(str(start + limit).encode()).decode() if more else None,
            "total_instances": len(rows),
            "label_counts": labels,
        }

    def _boot(self, instance: FakeInstance) -> None:
        """What the host does: the container's sshd, with the keys our request carried."""
        host_key = base64.b64decode(instance.request["env"]["SKYWARD_SSH_HOST_KEY"]).decode()
        if self.foreign_host_key:
            host_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
        login_key = login_key_of(instance.request["onstart"])
        server = start_machine(
            self.folder / f"instance-{instance.id}", instance.address, instance.port, host_key, login_key,
            start=not self.sshd_down,
        )
        # What the onstart script keeps for the guardian's end command (`machine.IDENTITY_FILE`).
        identity = server.home / ".skyward-vast.env"
        identity.write_text(f"CONTAINER_ID={instance.id}\nCONTAINER_API_KEY={instance.container_api_key}\n")
        identity.chmod(0o600)
        self._start_guardian(instance, server)
        with self._lock:
            if instance.id in self.instances:
                instance.server, instance.status = server, "running"
                return
        server.stop()  # destroyed while it booted

    def _start_guardian(self, instance: FakeInstance, server: SSHServer) -> None:
        """Run the onstart's guardian line (`skyward.guardian.boot`) as the container would, with
        the instance's environment (`$SKYWARD_GUARDIAN`) and its login's home."""
        onstart = instance.request.get("onstart") or ""
        start = onstart.find(GUARDIAN_LINE)
        if start < 0:
            return
        line = onstart[start : onstart.index("; fi", start) + len("; fi")]
        result = subprocess.run(
            ["bash", "-c", line], capture_output=True, text=True, timeout=30, check=False,
            env={**(instance.request.get("env") or {}), "HOME": str(server.home), "PATH": os.environ["PATH"]},
        )
        self.boot_guardians[instance.id] = result.stdout.strip() + result.stderr.strip()

    def relabel(self, instance_id: int, label: str) -> tuple[int, dict[str, Any]]:
        """PUT /api/v0/instances/{id}/ with a `label`: what `vastai label instance` sends."""
        with self._lock:
            instance = self.instances.get(instance_id)
            if instance is None:
                return 404, {"success": False, "error": "no_such_instance", "msg": "Instance not found."}
            instance.request = {**instance.request, "label": label}  # the rent request stays as sent
        return 200, {"success": True}

    def destroy(self, instance_id: int) -> tuple[int, dict[str, Any]]:
        with self._lock:
            instance = self.instances.pop(instance_id, None)
        if instance is None:
            return 404, {"success": False, "error": "no_such_instance", "msg": "Instance not found."}
        self.destroyed.append(instance_id)
        if instance.server is not None:
            instance.server.stop()
        return 200, {"success": True}

    # -- HTTP ----------------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        vast = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                url = urlsplit(self.path)
                path = url.path
                query = dict(parse_qsl(url.query))
                if self.command == "GET":
                    body = {**query, **body}
                vast.requests.append((self.command, path, body, self.headers.get("Authorization", "")))
                version = tuple(p for p in path.split("/") if p)[1:2]
                parts = tuple(p for p in path.split("/") if p)[2:]  # after /api/v0 or /api/v1
                if not vast.authorised(self.headers.get("Authorization", ""), self.command, parts):
                    denied = {"success": False, "error": "auth_error", "msg": "Invalid user key"}
                    return self._answer(401, denied)
                route = (self.command, *parts)
                if version == ("v1",):
                    if route == ("GET", "instances"):
                        return self._answer(*vast.list_instances(query))
                    return self._answer(404, {"success": False, "error": "not_found", "msg": path})
                if route == ("POST", "bundles"):
                    return self._answer(200, vast.search(body))
                if len(route) == 3 and route[:2] == ("PUT", "asks"):
                    return self._answer(*vast.create(int(route[2]), body))
                if len(route) == 3 and route[:2] == ("GET", "instances"):
                    instance = vast.instances.get(int(route[2]))
                    return self._answer(200, {"instances": instance.row() if instance else None})
                if len(route) == 3 and route[:2] == ("DELETE", "instances"):
                    return self._answer(*vast.destroy(int(route[2])))
                if len(route) == 3 and route[:2] == ("PUT", "instances") and "label" in body:
                    return self._answer(*vast.relabel(int(route[2]), str(body["label"])))
                if len(route) == 3 and route[:2] == ("PUT", "instances") and body.get("state") == "stopped":
                    return self._answer(*vast.stop_instance(int(route[2])))
                return self._answer(404, {"success": False, "error": "not_found", "msg": path})

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        return Handler


#: How the onstart's part that starts the node's guardian at boot begins (`BootGuardian.command`).
GUARDIAN_LINE = "if command -v python3"

_AUTHORIZE = re.compile(r"^printf '%s\\n' (.+) >> \S*authorized_keys$")


def login_key_of(onstart: str) -> str:
    """The key the onstart script appends to authorized_keys (what the container would trust)."""
    for part in onstart.split("; "):
        match = _AUTHORIZE.match(part.strip())
        if match:
            return shlex.split(match[1])[0]
    raise AssertionError(f"the onstart script authorises no key: {onstart!r}")
