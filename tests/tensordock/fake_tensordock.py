"""A TensorDock marketplace API (v0) on loopback whose VMs are real OpenSSH servers behind the
ports it forwards.

It answers, under `/api/v0` and (but for the public hostnode listing) only with the form's
`api_key` and `api_token`, the calls the provider makes (see skyward_tensordock/api.py for which
shapes TensorDock documents and which are modelled): `GET /client/deploy/hostnodes`,
`POST /client/deploy/single`, `/client/get/single`, `/client/list` and `/client/delete/single`,
refusals being `{"success": false, "error": ...}`. A deploy form is checked field by field:
unknown fields, a missing one, an unknown hostnode or GPU model, more than the hostnode has free,
or an external port it does not offer or has forwarded already are refused.

Each hostnode is a loopback address of its own with a few free ports; a deployed VM is an sshd on
its hostnode's address at the external port the deploy asked for (so two VMs on one hostnode share
the address and differ by port, as TensorDock's port forwarding has it), with the host key its
cloud-init script exports and the login key of `ssh_key`; the script's key line and guardian line
run as the VM would. A deploy takes the GPUs, vCPUs, RAM and port from the listing, a deletion
gives them back. Knobs: `out_of_stock` (hostnode ids) refuses deploys there as a hostnode whose
stock moved since the listing does; `sshd_down` boots VMs whose sshd never answers;
`delete_errors` fails that many delete calls with a 500; `impostor_key` boots VMs that answer
with another host key.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
import uuid
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, exported_host_key
from ssh_hosts import free_port, loopback

DEPLOY_REQUIRED = {
    "hostnode",
    "gpu_model",
    "gpu_count",
    "vcpus",
    "ram",
    "storage",
    "operating_system",
    "name",
    "password",
}
DEPLOY_FIELDS = DEPLOY_REQUIRED | {"ssh_key", "cloudinit_script", "external_ports", "internal_ports"}
_hosts = itertools.count(2)


def _hostnode(
    city: str, country: str, gpus: dict[str, tuple[int, float]], *, online: bool = True
) -> dict[str, Any]:
    return {
        "location": {"city": city, "country": country, "region": city, "id": str(uuid.uuid4()), "dc": None},
        "networking": {"ports": [], "receive": 1000, "send": 1000},
        "specs": {
            "cpu": {"amount": 32, "price": 0.003, "type": "AMD EPYC 7513"},
            "gpu": {model: {"amount": amount, "price": price} for model, (amount, price) in gpus.items()},
            "ram": {"amount": 128, "price": 0.002},
            "storage": {"amount": 2000, "price": 0.00005},
        },
        "status": {"listed": True, "online": online, "uptime": 0.999},
    }


def listing() -> dict[str, dict[str, Any]]:
    """The marketplace as `GET /client/deploy/hostnodes` lists it (prices per unit per hour)."""
    return {
        "hn-winnipeg": _hostnode("Winnipeg", "Canada", {"geforcertx4090-pcie-24gb": (2, 0.35)}),
        "hn-chicago": _hostnode("Chicago", "United States", {"geforcertx4090-pcie-24gb": (4, 0.40)}),
        "hn-helsinki": _hostnode(
            "Helsinki", "Finland", {"a100-pcie-80gb": (1, 1.20), "rtxa6000-pcie-48gb": (2, 0.45)}
        ),
        "hn-offline": _hostnode("Dallas", "United States", {"h100-sxm5-80gb": (8, 2.20)}, online=False),
    }


@attrs.define
class FakeTensorDock(FakeCloud):
    api_key: str
    api_token: str
    hostnodes: dict[str, dict[str, Any]] = attrs.field(factory=listing)
    #: Each hostnode's loopback address.
    addresses: dict[str, str] = attrs.field(factory=dict)
    vms: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: Every deploy form received (credentials left out), accepted or not, in order.
    deploys: list[dict[str, str]] = attrs.field(factory=list)
    deleted: list[str] = attrs.field(factory=list)
    out_of_stock: set[str] = attrs.field(factory=set)
    delete_errors: int = 0
    impostor_key: str | None = None

    NAME: ClassVar[str] = "TensorDock"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v0"

    def start(self) -> FakeTensorDock:
        for hostnode_id, row in self.hostnodes.items():
            address = loopback(17, next(_hosts))
            self.addresses[hostnode_id] = address
            row["networking"]["ports"] = sorted({free_port(address) for _ in range(3)})
        return super().start()

    def app(self) -> web.Application:
        app = web.Application()
        app.add_routes(
            [
                web.get("/api/v0/client/deploy/hostnodes", self._hostnodes),
                web.post("/api/v0/client/deploy/single", self._deploy),
                web.post("/api/v0/client/get/single", self._get),
                web.post("/api/v0/client/list", self._list),
                web.post("/api/v0/client/delete/single", self._delete),
            ]
        )
        return app

    def check_nothing_left(self) -> None:
        assert not self.vms, f"VMs left running: {sorted(self.vms)}"
        super().check_nothing_left()

    def leftover(self, pool: str, node: int, server: str, status: str = "Running") -> str:
        """A VM in the account as a crashed client leaves it (no sshd), named for `pool`."""
        self.vms[server] = {
            "name": f"skyward-{pool}-{node}",
            "status": status,
            "hostnode": "hn-chicago",
            "ip_address": "192.0.2.1",
            "port_forwards": {"20001": "22"},
            "city": "Chicago",
            "country": "United States",
            "total_price": 0.7,
            "type": "ondemand",
            "specs": {"gpu": {"amount": 1, "type": "geforcertx4090-pcie-24gb"}, "vcpus": 4, "ram": 16},
            "timestamp_creation": "Wed, 25 Nov 2026 10:00:00 GMT",
        }
        return server

    # -- calls ---------------------------------------------------------------------------------------

    async def _form(self, request: web.Request) -> dict[str, str] | None:
        form = {k: str(v) for k, v in (await request.post()).items()}
        if (form.pop("api_key", None), form.pop("api_token", None)) != (self.api_key, self.api_token):
            return None
        return form

    @staticmethod
    def _refuse(error: str, status: int = 200) -> web.Response:
        return web.json_response({"success": False, "error": error}, status=status)

    async def _hostnodes(self, request: web.Request) -> web.Response:
        return web.json_response({"success": True, "hostnodes": self.hostnodes})

    async def _get(self, request: web.Request) -> web.Response:
        form = await self._form(request)
        if form is None:
            return self._refuse("Unauthorized: invalid API key or token")
        row = self.vms.get(form.get("server", ""))
        if row is None:
            return self._refuse("Virtual machine not found")
        return web.json_response({"success": True, "virtualmachine": row})

    async def _list(self, request: web.Request) -> web.Response:
        if await self._form(request) is None:
            return self._refuse("Unauthorized: invalid API key or token")
        return web.json_response({"success": True, "virtualmachines": self.vms})

    async def _delete(self, request: web.Request) -> web.Response:
        form = await self._form(request)
        if form is None:
            return self._refuse("Unauthorized: invalid API key or token")
        if self.delete_errors > 0:
            self.delete_errors -= 1
            return self._refuse("Internal server error", status=500)
        server = form.get("server", "")
        row = self.vms.pop(server, None)
        if row is None:
            return self._refuse("Virtual machine not found")
        if server in self.machines or server in self.boot_guardians:
            self._give_back(row)  # a deployed VM (not one put in the account) took its stock
        await self.power_off(server)
        self.deleted.append(server)
        return web.json_response({"success": True})

    async def _deploy(self, request: web.Request) -> web.Response:
        form = await self._form(request)
        if form is None:
            return self._refuse("Unauthorized: invalid API key or token")
        self.deploys.append(form)
        try:
            port = self._check(form)
        except Invalid as exc:
            return self._refuse(str(exc), status=400)
        if form["hostnode"] in self.out_of_stock or not self._take(form, port):
            return self._refuse(f"Not enough GPUs available on hostnode {form['hostnode']}")
        server = str(uuid.uuid4())
        await asyncio.to_thread(self._boot, server, form, port)
        return web.json_response(
            {
                "success": True,
                "server": server,
                "ip": self.addresses[form["hostnode"]],
                "port_forwards": {str(port): "22"},
                "cost": {"total_price": self.vms[server]["total_price"]},
            }
        )

    # -- the marketplace's books ---------------------------------------------------------------------

    def _check(self, form: dict[str, str]) -> int:
        unknown, missing = set(form) - DEPLOY_FIELDS, DEPLOY_REQUIRED - set(form)
        expect(not unknown and not missing, f"unknown fields {sorted(unknown)}, missing {sorted(missing)}")
        row = self.hostnodes.get(form["hostnode"])
        expect(row is not None, f"unknown hostnode {form['hostnode']!r}")
        assert row is not None
        expect(form["gpu_model"] in row["specs"]["gpu"], f"hostnode has no {form['gpu_model']!r}")
        for field in ("gpu_count", "vcpus", "ram", "storage"):
            expect(form[field].isdigit(), f"{field} must be a whole number")
        expect(int(form["storage"]) >= 100, "storage must be at least 100 GB")
        expect(form.get("internal_ports") == "{22}", "internal_ports must forward 22")
        found = re.fullmatch(r"\{(\d+)\}", form.get("external_ports", ""))
        expect(found is not None, "external_ports must be a brace list such as {20000}")
        assert found is not None
        port = int(found.group(1))
        expect(port in row["networking"]["ports"], f"port {port} is not offered by this hostnode")
        in_use = {
            int(p)
            for vm in self.vms.values()
            if vm["hostnode"] == form["hostnode"]
            for p in vm["port_forwards"]
        }
        expect(port not in in_use, f"port {port} is in use")
        return port

    def _take(self, form: dict[str, str], port: int) -> bool:
        specs = self.hostnodes[form["hostnode"]]["specs"]
        wanted = {"cpu": int(form["vcpus"]), "ram": int(form["ram"]), "storage": int(form["storage"])}
        gpu = specs["gpu"][form["gpu_model"]]
        if gpu["amount"] < int(form["gpu_count"]) or any(specs[k]["amount"] < n for k, n in wanted.items()):
            return False
        gpu["amount"] -= int(form["gpu_count"])
        for kind, amount in wanted.items():
            specs[kind]["amount"] -= amount
        return True

    def _give_back(self, row: dict[str, Any]) -> None:
        specs = self.hostnodes.get(row["hostnode"], {}).get("specs")
        if specs is None:
            return
        specs["gpu"][row["specs"]["gpu"]["type"]]["amount"] += row["specs"]["gpu"]["amount"]
        for kind, field in (("cpu", "vcpus"), ("ram", "ram"), ("storage", "storage")):
            specs[kind]["amount"] += row["specs"][field]

    def _boot(self, server: str, form: dict[str, str], port: int) -> None:
        specs = self.hostnodes[form["hostnode"]]["specs"]
        gpus, vcpus, ram, storage = (int(form[f]) for f in ("gpu_count", "vcpus", "ram", "storage"))
        price = (
            gpus * specs["gpu"][form["gpu_model"]]["price"]
            + vcpus * specs["cpu"]["price"]
            + ram * specs["ram"]["price"]
            + storage * specs["storage"]["price"]
        )
        where = self.hostnodes[form["hostnode"]]["location"]
        address = self.addresses[form["hostnode"]]
        self.vms[server] = {
            "name": form["name"],
            "status": "Running",
            "hostnode": form["hostnode"],
            "ip_address": address,
            "port_forwards": {str(port): "22"},
            "city": where["city"],
            "country": where["country"],
            "operating_system": form["operating_system"],
            "total_price": round(price, 4),
            "type": "ondemand",
            "specs": {
                "gpu": {"amount": gpus, "type": form["gpu_model"]},
                "vcpus": vcpus,
                "ram": ram,
                "storage": storage,
            },
            "timestamp_creation": "Sun, 29 Nov 2026 10:00:00 GMT",
        }
        script = startup_script(form.get("cloudinit_script", ""))
        host_key = self.impostor_key or exported_host_key(script)
        if host_key is None:
            self.vms[server]["status"] = "Failed"  # the script found no key and failed
            return
        machine = self.boot_machine(server, address, port, host_key, form.get("ssh_key", ""))
        # The script's key line and guardian line, as the VM runs them (as root; here as this user,
        # with the login's home).
        self.run_boot_lines(server, machine, script, {})


def startup_script(cloudinit_script: str) -> str:
    """What the VM runs of a cloud-config whose `runcmd` decodes a base64 script into bash (as
    cloud-init would: escaped line breaks read as line breaks); empty when it holds none."""
    header, _, body = cloudinit_script.replace("\\n", "\n").partition("\n")
    if header.strip() != "#cloud-config":
        return ""
    try:
        command = json.loads(body)["runcmd"][0][2]
        return base64.b64decode(command.split()[1]).decode()
    except (ValueError, KeyError, IndexError, TypeError):
        return ""
