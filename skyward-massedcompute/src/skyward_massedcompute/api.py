"""The Massed Compute VM API calls the provider makes, over aiohttp, with its errors made Skyward's.

Massed Compute documents its VM API as an OpenAPI page (vm-docs.massedcompute.com/api/v1). What
that page states, and this module follows as written:

- the base URL `https://vm.massedcompute.com/api/v1` and `Authorization: Bearer <key>`;
- `GET /gpu-inventory`: `{"gpu_inventory": {<product>: {"instance_type": {"name", "description",
  "price_cents_per_hour", "specs": {"vcpu_count", "memory_gib", "storage_gb"}},
  "regions_with_capacity_available": [{"name", "description"}], "capacity_available": n}}}`;
- `GET /images`: `{"images": [...]}`;
- `GET /instance`: `{"runningInstances": [{"uuid", "name", "ip", "username", "password", "status"
  ("rented"), "os_booted", "command_startup", "created", "active", "image"}, ...]}` and
  `GET /instance/{uuid}`: `{"runningInstance": {...}}`;
- a deploy body of `productName`, `regionName`, `imageId`, `instanceName`, `coupon`, `command` (run
  at startup) and `sshKey` (the public keys let in).

What the page leaves out, modelled here as the smallest plausible shape (and only here, so a
correction is one edit): the deploy is `POST /instance/launch` answering `{"response": <uuid>}`;
the delete is `POST /instance/terminate` with `{"instanceUuids": [...]}`; an image row has `id` and
`name`; a machine row names its product in `product_name` and its price in `price_cents_per_hour`;
an unknown uuid is a 404; errors carry their text in `message` or `error`, and "no capacity" is
said in words (`ERRORS.capacity_phrases`) or with a 503. Massed Compute sells no spot machines.
The key only ever travels in the request header.
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward.errors import ProvisionError
from skyward.providers.rest import ApiErrors, Gone, JsonApi
from skyward_massedcompute.account import API_KEY_VARIABLE

LOGGER = "skyward.massedcompute"
ERRORS = ApiErrors(
    cloud="Massed Compute",
    credential="the API key",
    credentials=f"check {API_KEY_VARIABLE} (or MassedCompute(api_key=...))",
    capacity_phrases=(
        "no capacity",
        "insufficient capacity",
        "out of stock",
        "sold out",
        "not enough",
        "no inventory",
        "not available",
    ),
    advice={"insufficient funds": "add funds to the Massed Compute account"},
)
#: Statuses of a machine that will not come up.
FAILED_STATUSES = ("failed", "error")
#: Gone is core's: the names the provider imports from here.
__all__ = ["FAILED_STATUSES", "LOGGER", "Gone", "MassedAPI", "gone"]


class MassedAPI(JsonApi):
    """One API key and its HTTP session; `close()` when done."""

    errors = ERRORS

    def __init__(self, api_key: str, url: str) -> None:
        super().__init__(url, {"Authorization": f"Bearer {api_key}", "Accept": "application/json"})

    async def inventory(self) -> dict[str, dict[str, Any]]:
        """product name -> its inventory row (price, specs, regions with capacity)."""
        body = await self.call("GET", "/gpu-inventory", "list the GPU inventory")
        rows = body.get("gpu_inventory") if isinstance(body, dict) else None
        return {str(k): v for k, v in (rows or {}).items() if isinstance(v, dict)}

    async def images(self) -> list[dict[str, Any]]:
        body = await self.call("GET", "/images", "list images")
        rows = body.get("images") if isinstance(body, dict) else None
        return [row for row in rows or [] if isinstance(row, dict)]

    async def launch(self, request: dict[str, Any]) -> str:
        """Deploy one machine; its uuid."""
        body = await self.call("POST", "/instance/launch", "deploy an instance", json=request)
        uuid = str(body.get("response") or "") if isinstance(body, dict) else ""
        if not uuid:
            raise ProvisionError(f"Massed Compute answered the deploy without an instance uuid: {body!r}")
        structlog.get_logger(LOGGER).info(
            "skyward.massedcompute_instance_created",
            instance=uuid,
            name=request.get("instanceName"),
            product=request.get("productName"),
            region=request.get("regionName"),
        )
        return uuid

    async def instance(self, uuid: str) -> dict[str, Any] | None:
        """The machine, or None once Massed Compute no longer lists it."""
        body = await self.call("GET", f"/instance/{uuid}", f"read instance {uuid}", gone_ok=True)
        row = body.get("runningInstance") if isinstance(body, dict) else None
        return row if isinstance(row, dict) else None

    async def instances(self) -> list[dict[str, Any]]:
        body = await self.call("GET", "/instance", "list instances")
        rows = body.get("runningInstances") if isinstance(body, dict) else None
        return [row for row in rows or [] if isinstance(row, dict)]

    async def terminate(self, uuids: list[str]) -> None:
        """Delete machines; one already gone is not an error."""
        what = f"terminate {', '.join(uuids)}"
        await self.call(
            "POST", "/instance/terminate", what, json={"instanceUuids": list(uuids)}, gone_ok=True
        )


def gone(row: dict[str, Any] | None) -> bool:
    """Whether the machine bills no more: Massed Compute lists running machines only."""
    return row is None
