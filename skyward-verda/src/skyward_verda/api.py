"""The Verda API calls the provider makes, over aiohttp, with Verda's errors made Skyward's.

Verda's public API (https://api.verda.com/v1, the endpoints its official SDK `verda` calls):

- `POST /oauth2/token` (client-credentials grant) -> a bearer token, renewed before it expires;
- `GET /instance-types` (prices, spot prices, GPUs, memory) and `GET /instance-availability`
  (`isSpot`: which types each location can start now);
- `POST /sshkeys`, `DELETE /sshkeys/{id}`: the pool's login key, registered for its machines;
- `POST /scripts`, `DELETE /scripts/{id}`: one startup script per node (keys, guardian);
- `POST /instances` (answers the new id as text), `GET /instances`, `GET /instances/{id}`,
  `PUT /instances` with `{"id": [...], "action": "delete"}`.

Why not the SDK: it is synchronous (`requests`, every call would need a thread), it logs in when
the client is built, and it pulls `dataclasses-json` and `marshmallow` for the dozen fields read
here; the REST calls are few and documented. Errors arrive as `{"code": ..., "message": ...}`:
a refused credential is a `ProvisionError` naming the variables; "no capacity" (HTTP 503, or a
message that says so) is a `CapacityError` the base retries; the secret only ever travels in the
token request's body.
"""

from __future__ import annotations

import time
from typing import Any

import structlog

from skyward.errors import ProvisionError
from skyward.secrets import register_secret
from skyward.providers.rest import ApiErrors, Gone, JsonApi
from skyward_verda.account import ID_VARIABLE, SECRET_VARIABLE, ClientCredentials

LOGGER = "skyward.verda"
#: A token is renewed this long before Verda says it expires.
TOKEN_MARGIN = 60.0
ERRORS = ApiErrors(
    cloud="Verda",
    credentials=f"check {ID_VARIABLE} and {SECRET_VARIABLE} (or Verda(client_id=..., client_secret=...))",
    capacity_phrases=("not available", "no capacity", "insufficient resources", "out of stock", "sold out"),
    gone_phrases=(),
    advice={"insufficient_funds": "add funds to the Verda account"},
)
#: Instance statuses after which the machine is gone (or going) and bills no more.
GONE_STATUSES = ("discontinued", "deleted", "deleting", "deleted_permanently")
#: Gone is core's: the names the provider imports from here.
__all__ = ["LOGGER", "Gone", "VerdaAPI", "gone"]


class VerdaAPI(JsonApi):
    """One account's client: its token and HTTP session; `close()` when done."""

    errors = ERRORS

    def __init__(self, credentials: ClientCredentials, url: str) -> None:
        super().__init__(url, {"Accept": "application/json"})
        self._credentials = credentials
        self._token = ""
        self._expires = 0.0

    # -- the token ---------------------------------------------------------------------------------

    async def _bearer(self) -> str:
        if self._token and time.monotonic() < self._expires:
            return self._token
        status, body = await self.send("POST", self.url + "/oauth2/token", "log in", json={
            "grant_type": "client_credentials",
            "client_id": self._credentials.client_id,
            "client_secret": self._credentials.client_secret,
        })
        if status >= 400:
            raise self.errors.reading(status, body, "log in")
        if not isinstance(body, dict) or not body.get("access_token"):
            raise ProvisionError(f"Verda answered the login without a token ({status})")
        self._token = str(body["access_token"])
        register_secret(self._token)
        self._expires = time.monotonic() + max(float(body.get("expires_in") or 3600) - TOKEN_MARGIN, 1.0)
        return self._token

    async def headers(self) -> dict[str, str]:
        """The bearer token, renewed before it expires (the login itself goes without one)."""
        return {"Authorization": f"Bearer {await self._bearer()}"}

    # -- catalog -----------------------------------------------------------------------------------

    async def instance_types(self) -> list[dict[str, Any]]:
        body = await self.call("GET", "/instance-types", "list instance types", params={"currency": "usd"})
        return [row for row in body or [] if isinstance(row, dict)]

    async def availability(self, spot: bool) -> dict[str, set[str]]:
        """instance type -> the locations that can start one now (spot or not)."""
        body = await self.call(
            "GET", "/instance-availability", "read availability", params={"isSpot": str(spot).lower()}
        )
        where: dict[str, set[str]] = {}
        for row in body or []:
            if isinstance(row, dict):
                for kind in row.get("availabilities") or []:
                    where.setdefault(str(kind), set()).add(str(row.get("location_code")))
        return where

    # -- keys and scripts --------------------------------------------------------------------------

    async def add_ssh_key(self, name: str, key: str) -> str:
        body = {"name": name, "key": key}
        key_id, _ = await self.create("/sshkeys", "register the pool's SSH key", json=body)
        return key_id

    async def delete_ssh_key(self, key_id: str) -> None:
        await self.call("DELETE", f"/sshkeys/{key_id}", f"delete SSH key {key_id}", gone_ok=True)

    async def add_script(self, name: str, script: str) -> str:
        body = {"name": name, "script": script}
        script_id, _ = await self.create("/scripts", "save a startup script", json=body)
        return script_id

    async def delete_script(self, script_id: str) -> None:
        await self.call("DELETE", f"/scripts/{script_id}", f"delete startup script {script_id}", gone_ok=True)

    async def ssh_keys(self) -> list[dict[str, Any]]:
        body = await self.call("GET", "/sshkeys", "list SSH keys")
        return [row for row in body or [] if isinstance(row, dict)]

    async def scripts(self) -> list[dict[str, Any]]:
        body = await self.call("GET", "/scripts", "list startup scripts")
        return [row for row in body or [] if isinstance(row, dict)]

    # -- instances ---------------------------------------------------------------------------------

    async def create_instance(self, request: dict[str, Any]) -> str:
        instance_id, _ = await self.create("/instances", "deploy an instance", json=request)
        structlog.get_logger(LOGGER).info(
            "skyward.verda_instance_created", instance=instance_id, hostname=request.get("hostname"),
            instance_type=request.get("instance_type"), spot=request.get("is_spot"),
            location=request.get("location_code"),
        )
        return instance_id

    async def instance(self, instance_id: str) -> dict[str, Any] | None:
        """The instance, or None once Verda no longer knows it."""
        what = f"read instance {instance_id}"
        body = await self.call("GET", f"/instances/{instance_id}", what, gone_ok=True)
        return body if isinstance(body, dict) else None

    async def instances(self) -> list[dict[str, Any]]:
        body = await self.call("GET", "/instances", "list instances")
        return [row for row in body or [] if isinstance(row, dict)]

    async def delete_instances(self, ids: list[str]) -> None:
        """`PUT /instances` with the delete action; one already gone is not an error."""
        await self.call(
            "PUT", "/instances", f"delete {', '.join(ids)}",
            json={"id": list(ids), "action": "delete"}, gone_ok=True,
        )


def gone(row: dict[str, Any] | None) -> bool:
    return row is None or str(row.get("status") or "") in GONE_STATUSES

