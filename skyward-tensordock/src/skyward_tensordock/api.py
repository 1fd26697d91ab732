"""The TensorDock marketplace API calls the provider makes, over aiohttp, with its errors made
Skyward's.

TensorDock documents its marketplace API (v0) as a Postman collection. What it states, and this
module follows as written:

- the base URL `https://dashboard.tensordock.com/api/v0` (`marketplace.tensordock.com` serves the
  same), every call but the hostnode listing authenticated by an `api_key` and `api_token` pair
  sent as form fields (`application/x-www-form-urlencoded`), never in a header or the URL;
- `GET /client/deploy/hostnodes`: `{"success": true, "hostnodes": {<uuid>: {"location": {"city",
  "country", "region", "id"}, "networking": {"ports": [...], "receive", "send"}, "specs": {"cpu":
  {"amount", "price", "type"}, "gpu": {<model>: {"amount", "price"}}, "ram": {"amount", "price"},
  "storage": {"amount", "price"}}, "status": {"listed", "online", ...}}}}`: what each hostnode has
  free now and its price per unit per hour;
- `POST /client/deploy/single` with `hostnode`, `gpu_model`, `gpu_count`, `vcpus`, `ram`,
  `storage`, `operating_system`, `name`, `password`, `ssh_key`, `cloudinit_script`,
  `external_ports` and `internal_ports` (brace lists, "{20013}" and "{22}"), answering
  `{"success": true, "server": <uuid>, "ip": <address>, "port_forwards": {"<external>": "<internal>"},
  "cost": {...}}`;
- `POST /client/get/single` (`server`): `{"success": true, "virtualmachine": {...}}`;
  `POST /client/list`: `{"success": true, "virtualmachines": {<uuid>: {...}}}` with each VM's
  `name`, `status`, `ip_address`, `port_forwards`, `hostnode`, `total_price`, `timestamp_creation`;
  `POST /client/delete/single` (`server`): `{"success": true}`.

What the collection leaves out, modelled here as the smallest plausible shape (and only here, so
a correction is one edit): a refusal is `{"success": false, "error": <words>}` (with a 200 or an
error status); a refused pair is said with a 401 or in words ("unauthorized", "invalid api");
a hostnode without the GPUs or ports asked for says so in words (`ERRORS.capacity_phrases`); a
VM that is not there says "not found". TensorDock's marketplace API sells on-demand VMs only.
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward.errors import ProvisionError
from skyward.providers.rest import ApiErrors, Gone, JsonApi
from skyward_tensordock.account import API_KEY_VARIABLE, API_TOKEN_VARIABLE, Credentials

LOGGER = "skyward.tensordock"
ERRORS = ApiErrors(
    cloud="TensorDock",
    credential="the API key and token",
    credentials=(
        f"check {API_KEY_VARIABLE} and {API_TOKEN_VARIABLE} (or TensorDock(api_key=..., api_token=...))"
    ),
    capacity_phrases=(
        "not enough",
        "no available",
        "out of stock",
        "insufficient resources",
        "not available",
        "sold out",
        "port is in use",
        "ports are in use",
    ),
    advice={"balance": "add funds to the TensorDock account"},
)
#: Words of a `success: false` answer that mean the pair was refused.
REFUSED_WORDS = ("unauthorized", "invalid api", "authorization")
#: Statuses of a VM that will not come up (lower case).
FAILED_STATUSES = ("failed", "error", "deleted", "outbid", "stopped")
__all__ = ["FAILED_STATUSES", "LOGGER", "Gone", "TensorDockAPI"]


def _refusal(body: dict[str, Any], what: str) -> ProvisionError:
    words = str(body.get("error") or body.get("message") or "").lower()
    return ERRORS.reading(401 if any(w in words for w in REFUSED_WORDS) else 400, body, what)


class TensorDockAPI(JsonApi):
    """One authorization pair and its HTTP session; `close()` when done."""

    errors = ERRORS

    def __init__(self, credentials: Credentials, url: str) -> None:
        super().__init__(url, {"Accept": "application/json"})
        self._credentials = credentials

    async def _post(self, path: str, what: str, form: dict[str, Any], *, gone_ok: bool = False) -> Any:
        data = {**self._credentials.form(), **{k: str(v) for k, v in form.items()}}
        try:
            body = await self.call("POST", path, what, data=data)
            if isinstance(body, dict) and body.get("success") is False:
                raise _refusal(body, what)
        except Gone:
            if gone_ok:
                return None
            raise
        return body

    async def hostnodes(self) -> dict[str, dict[str, Any]]:
        """hostnode uuid -> what it has free now and its prices (a public listing)."""
        body = await self.call("GET", "/client/deploy/hostnodes", "list the hostnodes")
        rows = body.get("hostnodes") if isinstance(body, dict) else None
        return {str(k): v for k, v in (rows or {}).items() if isinstance(v, dict)}

    async def deploy(self, form: dict[str, Any]) -> dict[str, Any]:
        """Deploy one VM; the answer (`server`, `ip`, `port_forwards`)."""
        body = await self._post("/client/deploy/single", "deploy a virtual machine", form)
        if not isinstance(body, dict) or not body.get("server"):
            raise ProvisionError(f"TensorDock answered the deploy without a server id: {body!r}")
        structlog.get_logger(LOGGER).info(
            "skyward.tensordock_vm_created",
            server=body["server"],
            name=form.get("name"),
            hostnode=form.get("hostnode"),
            gpu=form.get("gpu_model"),
            ports=body.get("port_forwards"),
        )
        return body

    async def vm(self, server: str) -> dict[str, Any] | None:
        """The VM, or None once TensorDock no longer has it."""
        body = await self._post("/client/get/single", f"read VM {server}", {"server": server}, gone_ok=True)
        row = body.get("virtualmachine") if isinstance(body, dict) else None
        return row if isinstance(row, dict) else None

    async def vms(self) -> list[dict[str, Any]]:
        """Every VM of the organization, each with its uuid as `id`."""
        body = await self._post("/client/list", "list virtual machines", {})
        rows = body.get("virtualmachines") if isinstance(body, dict) else None
        return [{**row, "id": str(uuid)} for uuid, row in (rows or {}).items() if isinstance(row, dict)]

    async def delete(self, server: str) -> None:
        """Delete a VM; one already gone is not an error."""
        await self._post("/client/delete/single", f"delete VM {server}", {"server": server}, gone_ok=True)


def ssh_port(row: dict[str, Any]) -> int | None:
    """The external port TensorDock forwards to the VM's port 22, from `port_forwards`."""
    forwards = row.get("port_forwards")
    for external, internal in forwards.items() if isinstance(forwards, dict) else ():
        if str(internal) == "22" and str(external).isdigit():
            return int(external)
    return None
