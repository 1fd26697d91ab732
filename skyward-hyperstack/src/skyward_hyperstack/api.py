"""The Hyperstack Infrahub API calls Skyward makes, over aiohttp, with Hyperstack's errors made Skyward's.

The endpoints (https://infrahub-api.nexgencloud.com/v1, as the API reference and the official
SDK `hyperstack` name them), each authenticated by the `api_key` header:

- `GET /core/flavors` (`{"data": [{"gpu", "region_name", "flavors": [{"name", "cpu", "ram",
  "disk", "gpu", "gpu_count", "stock_available", ...}]}]}`) and `GET /pricebook` (a bare list of
  `{"name": "A100-80G-PCIe", "value": 1.35}`: USD per GPU, or per resource, per hour);
- `GET|POST /core/environments`: the environment VMs and keypairs live in (one region each);
- `GET|POST /core/keypairs`, `DELETE /core/keypair/{id}`: the pool's login key;
- `POST /core/virtual-machines` (answers `{"instances": [{"id", ...}]}`), `GET
  /core/virtual-machines` (`{"instances": [...]}`), `GET /core/virtual-machines/{id}`
  (`{"instance": {...}}`), `DELETE /core/virtual-machines/{id}`; the list is paged (`page`,
  `pageSize`) and filtered by name (`search`);
- `POST /object-storage/access-keys` (`{"id", "access_key", "secret_key", ...}` at the top
  level) and `DELETE /object-storage/access-keys/{id}`: the ephemeral keys of
  `sky.storage.Hyperstack` (`storage_keys` runs them for core's synchronous storage code).

Errors arrive as `{"status": false, "message": ..., "error_reason": ...}`: a refused key is
`Refused` naming the variable, a sold-out flavor a `CapacityError` the pool falls over on.
Why not the SDK: it is generated, synchronous and heavy (some 700 kB, pydantic models for every
endpoint) for the dozen fields read here.
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward.errors import ProvisionError
from skyward.providers.rest import ApiErrors, JsonApi
from skyward_hyperstack.account import API_KEY_VARIABLE

LOGGER = "skyward.hyperstack"
ERRORS = ApiErrors(
    cloud="Hyperstack",
    credentials=f"check {API_KEY_VARIABLE} (or Hyperstack(api_key=...))",
    credential="the API key",
    capacity_phrases=(
        "out of stock",
        "no stock",
        "not enough resources",
        "insufficient resources",
        "insufficient capacity",
        "no capacity",
        "not available in the region",
    ),
    advice={"insufficient balance": "add credit to the Hyperstack account"},
)
#: VM statuses after which the machine bills no more (or is going).
GONE_STATUSES = ("DELETING", "DELETED")
ACCESS_KEYS = "/object-storage/access-keys"
#: VMs are listed this many per page, at most `MAX_PAGES` pages (10,000 VMs).
PAGE_SIZE = 100
MAX_PAGES = 100


class HyperstackAPI(JsonApi):
    """One API key's client: its HTTP session; `close()` when done."""

    errors = ERRORS

    def __init__(self, api_key: str, url: str) -> None:
        super().__init__(url, {"api_key": api_key, "Accept": "application/json"})

    # -- catalog -----------------------------------------------------------------------------------

    async def flavors(self, region: str | None = None) -> list[dict[str, Any]]:
        """Every flavor (with its `region_name` and `stock_available`), in `region` or in all."""
        params = {"region": region} if region else {}
        body = await self.call("GET", "/core/flavors", "list flavors", params=params)
        found = []
        for group in _rows(body, "data"):
            for row in group.get("flavors") or []:
                if isinstance(row, dict) and row.get("name"):
                    found.append({"region_name": group.get("region_name"), **row})
        return found

    async def pricebook(self) -> dict[str, float]:
        """Resource name -> USD per hour (a GPU model's price is per GPU)."""
        body = await self.call("GET", "/pricebook", "read the pricebook")
        prices = {}
        for row in body if isinstance(body, list) else []:
            try:
                prices[str(row["name"])] = float(row["value"])
            except (KeyError, TypeError, ValueError):
                continue
        return prices

    # -- environments and keypairs -------------------------------------------------------------------

    async def environments(self) -> list[dict[str, Any]]:
        return _rows(await self.call("GET", "/core/environments", "list environments"), "environments")

    async def create_environment(self, name: str, region: str) -> dict[str, Any]:
        what = f"create environment {name} in {region}"
        body = await self.call("POST", "/core/environments", what, json={"name": name, "region": region})
        return _one(body, "environment", what)

    async def keypairs(self) -> list[dict[str, Any]]:
        return _rows(await self.call("GET", "/core/keypairs", "list keypairs"), "keypairs")

    async def import_keypair(self, name: str, environment: str, public_key: str) -> str:
        what = "import the pool's SSH keypair"
        body = {"name": name, "environment_name": environment, "public_key": public_key}
        keypair = _one(await self.call("POST", "/core/keypairs", what, json=body), "keypair", what)
        return str(keypair["id"])

    async def delete_keypair(self, keypair_id: str) -> None:
        await self.call("DELETE", f"/core/keypair/{keypair_id}", f"delete keypair {keypair_id}", gone_ok=True)

    # -- virtual machines ----------------------------------------------------------------------------

    async def create_vm(self, request: dict[str, Any]) -> str:
        what = f"create VM {request.get('name')} ({request.get('flavor_name')})"
        body = await self.call("POST", "/core/virtual-machines", what, json=request)
        created = _rows(body, "instances")
        if not created or created[0].get("id") is None:
            raise ProvisionError(f"Hyperstack answered the call to {what} without an instance id: {body!r}")
        vm_id = str(created[0]["id"])
        structlog.get_logger(LOGGER).info(
            "skyward.hyperstack_vm_created",
            vm=vm_id,
            name=request.get("name"),
            flavor=request.get("flavor_name"),
            environment=request.get("environment_name"),
        )
        return vm_id

    async def vm(self, vm_id: str) -> dict[str, Any] | None:
        """The VM, or None once Hyperstack no longer knows it."""
        body = await self.call("GET", f"/core/virtual-machines/{vm_id}", f"read VM {vm_id}", gone_ok=True)
        row = body.get("instance") if isinstance(body, dict) else None
        return row if isinstance(row, dict) else None

    async def vms(self, search: str = "") -> list[dict[str, Any]]:
        """Every VM whose name contains `search`, page by page (the oldest first)."""
        found: list[dict[str, Any]] = []
        for page in range(1, MAX_PAGES + 1):
            params = {"page": page, "pageSize": PAGE_SIZE, **({"search": search} if search else {})}
            body = await self.call("GET", "/core/virtual-machines", "list VMs", params=params)
            rows = _rows(body, "instances")
            found += rows
            if len(rows) < PAGE_SIZE:
                break
        return found

    async def delete_vm(self, vm_id: str) -> None:
        await self.call("DELETE", f"/core/virtual-machines/{vm_id}", f"delete VM {vm_id}", gone_ok=True)

    # -- object storage's access keys ------------------------------------------------------------------

    async def create_access_key(self, region: str, description: str) -> dict[str, Any]:
        """A new access key pair in `region`: `id`, `access_key`, `secret_key` (shown only now)."""
        what = f"mint an object-storage access key in {region}"
        body = await self.call("POST", ACCESS_KEYS, what, json={"region": region, "description": description})
        return body if isinstance(body, dict) else {}

    async def delete_access_key(self, key_id: str) -> None:
        """Delete access key `key_id`; one gone already is deleted enough."""
        await self.call("DELETE", f"{ACCESS_KEYS}/{key_id}", f"delete access key id {key_id}", gone_ok=True)


def gone(row: dict[str, Any] | None) -> bool:
    return row is None or str(row.get("status") or "").upper() in GONE_STATUSES


def _rows(body: Any, field: str) -> list[dict[str, Any]]:
    rows = body.get(field) if isinstance(body, dict) else None
    return [row for row in rows or [] if isinstance(row, dict)]


def _one(body: Any, field: str, what: str) -> dict[str, Any]:
    row = body.get(field) if isinstance(body, dict) else None
    if not isinstance(row, dict) or row.get("id") is None:
        raise ProvisionError(f"Hyperstack answered the call to {what} without its {field}: {body!r}")
    return row
