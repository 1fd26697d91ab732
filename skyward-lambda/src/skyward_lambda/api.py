"""The Lambda Cloud API calls the provider makes, over aiohttp, with Lambda's errors made Skyward's.

Lambda's Cloud API v1 (https://cloud.lambda.ai/api/v1, `Authorization: Bearer <LAMBDA_API_KEY>`;
Lambda also takes the key as HTTP basic auth's user name, but the bearer header keeps it out of
any URL). Every answer wraps its content in `{"data": ...}`:

- `GET /instance-types`: each type (its GPUs, vCPUs, memory, `price_cents_per_hour`) with the
  regions that have capacity for it right now;
- `POST /instance-operations/launch` (`{"data": {"instance_ids": [...]}}`), `GET /instances`,
  `GET /instances/{id}`, `POST /instance-operations/terminate` with `{"instance_ids": [...]}`;
- `GET /ssh-keys`, `POST /ssh-keys` (`name`, `public_key`), `DELETE /ssh-keys/{id}`.

Errors arrive as `{"error": {"code": ..., "message": ..., "suggestion": ...}}`: a refused key
(`global/invalid-api-key`, 401; `global/account-inactive`, 403) is a `ProvisionError` naming
`LAMBDA_API_KEY`; no capacity (`instance-operations/launch/insufficient-capacity`, a 400) is a
`CapacityError` that falls over to the next offer; `global/object-does-not-exist` (404) is gone.
Lambda limits launches to a few a minute: launches go one at a time, and a 429 is waited out.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from skyward.errors import ProvisionError
from skyward.providers.rest import ApiErrors, Gone, JsonApi
from skyward_lambda.account import API_KEY_VARIABLE

LOGGER = "skyward.lambda"
#: Instance statuses after which the machine is gone (or going) and bills no more.
GONE_STATUSES = ("terminating", "terminated", "preempted")

#: Gone is core's: the names the provider imports from here.
__all__ = ["LOGGER", "Gone", "LambdaAPI", "gone"]


ERRORS = ApiErrors(
    cloud="Lambda Cloud",
    credential="the API key",
    credentials=f"check {API_KEY_VARIABLE} (or LambdaCloud(api_key=...))",
    capacity_phrases=("insufficient-capacity", "not enough capacity"),
    gone_phrases=("object-does-not-exist", "not found"),
    advice={
        "quota-exceeded": "the account's instance quota is reached: ask Lambda to raise it",
        "payment": "add a payment method in the Lambda Cloud console",
    },
)


def data(body: Any) -> Any:
    """The content of a good answer (`{"data": ...}`)."""
    return body.get("data") if isinstance(body, dict) else None


class LambdaAPI(JsonApi):
    """One API key and its HTTP session; `close()` when done."""

    errors = ERRORS

    def __init__(self, api_key: str, url: str) -> None:
        super().__init__(url, {"Authorization": f"Bearer {api_key}", "Accept": "application/json"})
        self._launching = asyncio.Lock()

    async def instance_types(self) -> dict[str, dict[str, Any]]:
        """Type name -> `{"instance_type": {...}, "regions_with_capacity_available": [...]}`."""
        found = data(await self.call("GET", "/instance-types", "list instance types"))
        return {str(k): v for k, v in (found or {}).items() if isinstance(v, dict)}

    async def add_ssh_key(self, name: str, public_key: str) -> str:
        body = {"name": name, "public_key": public_key}
        key_id, _ = await self.create("/ssh-keys", "register the pool's SSH key", within="data", json=body)
        return key_id

    async def ssh_keys(self) -> list[dict[str, Any]]:
        rows = data(await self.call("GET", "/ssh-keys", "list SSH keys"))
        return [row for row in rows or [] if isinstance(row, dict)]

    async def delete_ssh_key(self, key_id: str) -> None:
        await self.call("DELETE", f"/ssh-keys/{key_id}", f"delete SSH key {key_id}", gone_ok=True)

    async def launch(self, request: dict[str, Any]) -> str:
        """One instance, launched after any launch still in flight (Lambda's launch rate limit)."""
        what = f"launch {request.get('instance_type_name')} in {request.get('region_name')}"
        async with self._launching:
            ids = data(await self.call("POST", "/instance-operations/launch", what, json=request)) or {}
        found = ids.get("instance_ids") if isinstance(ids, dict) else None
        if not isinstance(found, list) or len(found) != 1:
            raise ProvisionError(f"Lambda Cloud answered the call to {what} without one instance id: {ids!r}")
        structlog.get_logger(LOGGER).info(
            "skyward.lambda_instance_launched",
            instance=found[0],
            name=request.get("name"),
            instance_type=request.get("instance_type_name"),
            region=request.get("region_name"),
        )
        return str(found[0])

    async def instance(self, instance_id: str) -> dict[str, Any] | None:
        """The instance, or None once Lambda no longer knows it."""
        what = f"read instance {instance_id}"
        row = data(await self.call("GET", f"/instances/{instance_id}", what, gone_ok=True))
        return row if isinstance(row, dict) else None

    async def instances(self) -> list[dict[str, Any]]:
        rows = data(await self.call("GET", "/instances", "list instances"))
        return [row for row in rows or [] if isinstance(row, dict)]

    async def terminate(self, instance_id: str) -> None:
        """Terminate one instance; one already gone is not an error."""
        body = {"instance_ids": [instance_id]}
        what = f"terminate instance {instance_id}"
        await self.call("POST", "/instance-operations/terminate", what, json=body, gone_ok=True)


def gone(row: dict[str, Any] | None) -> bool:
    return row is None or str(row.get("status") or "") in GONE_STATUSES
