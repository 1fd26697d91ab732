"""The Novita GPU instance API calls the provider makes, over aiohttp, with Novita's errors made Skyward's.

Endpoints (https://api.novita.ai/gpu-instance/openapi/v1, `Authorization: Bearer <NOVITA_API_KEY>`):

- `GET /products?gpuNum=&billingMethod=onDemand|spot`: products (a GPU model in a cluster), with
  `availableDeploy`, `price` and `spotPrice` (per GPU per hour, in units of 1/100000 USD);
- `POST /gpu/instance/create` (answers `{"id": ...}`), `GET /gpu/instance?instanceId=`,
  `GET /gpu/instances` (paged), `POST /gpu/instance/delete` with `{"instanceId": ...}`.

Errors: a refused key is a `ProvisionError` naming `NOVITA_API_KEY`; "no capacity" answers (out of
stock, no available GPU) are `CapacityError`, retried by the base; anything else a
`ProvisionError` quoting Novita's message. The key only ever travels in the request header.
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward.providers.rest import ApiErrors, Gone, JsonApi
from skyward_novita.account import API_KEY_VARIABLE

LOGGER = "skyward.novita"
ERRORS = ApiErrors(
    cloud="Novita",
    credential="the API key",
    credentials=f"check {API_KEY_VARIABLE} (or Novita(api_key=...))",
    capacity_phrases=(
        "insufficient", "not enough", "no available", "out of stock", "sold out", "no resource",
        "unavailable",
    ),
)
#: Instance statuses after which the container is gone (or going) and bills no more.
GONE_STATUSES = ("removed", "removing", "toRemove")
#: Statuses of an instance that will not come up (its container exited or failed to start).
FAILED_STATUSES = ("exited", "failed", "error")
PAGE_SIZE = 100


#: Gone is core's: the names the provider imports from here.
__all__ = ["FAILED_STATUSES", "LOGGER", "Gone", "NovitaAPI", "gone"]


class NovitaAPI(JsonApi):
    """One API key and its HTTP session; `close()` when done."""

    errors = ERRORS

    def __init__(self, api_key: str, url: str) -> None:
        super().__init__(url, {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"})

    async def products(self, gpus: int, spot: bool) -> list[dict[str, Any]]:
        params = {"gpuNum": str(gpus), "billingMethod": "spot" if spot else "onDemand"}
        body = await self.call("GET", "/products", "list GPU products", params=params)
        rows = body.get("data") if isinstance(body, dict) else None
        return [row for row in rows or [] if isinstance(row, dict)]

    async def create_instance(self, request: dict[str, Any]) -> str:
        instance_id, _ = await self.create("/gpu/instance/create", "create an instance", json=request)
        structlog.get_logger(LOGGER).info(
            "skyward.novita_instance_created", instance=instance_id, name=request.get("name"),
            product=request.get("productId"), billing=request.get("billingMode"),
        )
        return instance_id

    async def instance(self, instance_id: str) -> dict[str, Any] | None:
        body = await self.call("GET", "/gpu/instance", f"read instance {instance_id}",
                               params={"instanceId": instance_id}, gone_ok=True)
        return body if isinstance(body, dict) and body.get("id") else None

    async def instances(self) -> list[dict[str, Any]]:
        """Every instance of the account, every page read."""
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            body = await self.call("GET", "/gpu/instances", "list instances",
                                    params={"pageSize": str(PAGE_SIZE), "pageNumber": str(page)})
            rows = (body.get("instances") or body.get("data") or []) if isinstance(body, dict) else []
            found += [row for row in rows if isinstance(row, dict)]
            total = int(body.get("total") or 0) if isinstance(body, dict) else 0
            if len(rows) < PAGE_SIZE or len(found) >= total:
                return found
            page += 1

    async def delete(self, instance_id: str) -> None:
        """`POST /gpu/instance/delete`; one already gone is not an error."""
        await self.call("POST", "/gpu/instance/delete", f"delete instance {instance_id}",
                        json={"instanceId": instance_id}, gone_ok=True)


def gone(row: dict[str, Any] | None) -> bool:
    return row is None or str(row.get("status") or "") in GONE_STATUSES

