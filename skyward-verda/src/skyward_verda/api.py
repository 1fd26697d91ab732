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

from skyward.errors import CapacityError, ProvisionError
from skyward.observe.logging import register_secret
from skyward.providers.rest import JsonApi
from skyward_verda.account import ID_VARIABLE, SECRET_VARIABLE, ClientCredentials

LOGGER = "skyward.verda"
#: A token is renewed this long before Verda says it expires.
TOKEN_MARGIN = 60.0
CAPACITY_PHRASES = ("not available", "no capacity", "insufficient resources", "out of stock", "sold out")
#: Instance statuses after which the machine is gone (or going) and bills no more.
GONE_STATUSES = ("discontinued", "deleted", "deleting", "deleted_permanently")


class Gone(ProvisionError):
    """The thing asked about does not exist (any more)."""


class VerdaAPI(JsonApi):
    """One account's client: its token and HTTP session; `close()` when done."""

    cloud = "Verda"

    def __init__(self, credentials: ClientCredentials, url: str) -> None:
        super().__init__(url, {"Accept": "application/json"})
        self._credentials = credentials
        self._token = ""
        self._expires = 0.0

    # -- the token ---------------------------------------------------------------------------------

    async def _bearer(self) -> str:
        if self._token and time.monotonic() < self._expires:
            return self._token
        status, body = await self._send("POST", "/oauth2/token", "log in", json={
            "grant_type": "client_credentials",
            "client_id": self._credentials.client_id,
            "client_secret": self._credentials.client_secret,
        })
        if not isinstance(body, dict) or not body.get("access_token"):
            raise ProvisionError(f"Verda answered the login without a token ({status})")
        self._token = str(body["access_token"])
        register_secret(self._token)
        self._expires = time.monotonic() + max(float(body.get("expires_in") or 3600) - TOKEN_MARGIN, 1.0)
        return self._token

    # -- one call ----------------------------------------------------------------------------------

    async def _send(self, method: str, path: str, what: str, **kwargs: Any) -> tuple[int, Any]:
        status, body = await self.send(method, self.url + path, what, **kwargs)
        if status < 400:
            return status, body
        code, message = _error(body, status)
        if status in (401, 403) or code == "unauthorized_request":
            raise ProvisionError(
                f"Verda refused the credentials ({status}: {message}) when asked to {what}: check "
                f"{ID_VARIABLE} and {SECRET_VARIABLE} (or Verda(client_id=..., client_secret=...))"
            )
        if status == 404 or code == "not_found":
            raise Gone(f"Verda: could not {what}: {message}")
        if status == 503 or any(phrase in message.lower() for phrase in CAPACITY_PHRASES):
            raise CapacityError(f"Verda has no capacity to {what}: {message}")
        if code == "insufficient_funds":
            raise ProvisionError(f"Verda: could not {what}: {message}; add funds to the Verda account")
        raise ProvisionError(f"Verda could not {what} ({status}): {message}")

    async def _call(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        token = await self._bearer()
        headers = {"Authorization": f"Bearer {token}"}
        _, body = await self._send(method, path, what, headers=headers, **kwargs)
        return body

    async def _delete(self, method: str, path: str, what: str, **kwargs: Any) -> None:
        """A deleting call; what is already gone is not an error."""
        try:
            await self._call(method, path, what, **kwargs)
        except Gone:
            return

    # -- catalog -----------------------------------------------------------------------------------

    async def instance_types(self) -> list[dict[str, Any]]:
        body = await self._call("GET", "/instance-types", "list instance types", params={"currency": "usd"})
        return [row for row in body or [] if isinstance(row, dict)]

    async def availability(self, spot: bool) -> dict[str, set[str]]:
        """instance type -> the locations that can start one now (spot or not)."""
        body = await self._call(
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
        return _id(await self._call(
            "POST", "/sshkeys", "register the pool's SSH key", json={"name": name, "key": key}
        ))

    async def delete_ssh_key(self, key_id: str) -> None:
        await self._delete("DELETE", f"/sshkeys/{key_id}", f"delete SSH key {key_id}")

    async def add_script(self, name: str, script: str) -> str:
        return _id(await self._call(
            "POST", "/scripts", "save a startup script", json={"name": name, "script": script}
        ))

    async def delete_script(self, script_id: str) -> None:
        await self._delete("DELETE", f"/scripts/{script_id}", f"delete startup script {script_id}")

    async def ssh_keys(self) -> list[dict[str, Any]]:
        body = await self._call("GET", "/sshkeys", "list SSH keys")
        return [row for row in body or [] if isinstance(row, dict)]

    async def scripts(self) -> list[dict[str, Any]]:
        body = await self._call("GET", "/scripts", "list startup scripts")
        return [row for row in body or [] if isinstance(row, dict)]

    # -- instances ---------------------------------------------------------------------------------

    async def create_instance(self, request: dict[str, Any]) -> str:
        instance_id = _id(await self._call("POST", "/instances", "deploy an instance", json=request))
        structlog.get_logger(LOGGER).info(
            "skyward.verda_instance_created", instance=instance_id, hostname=request.get("hostname"),
            instance_type=request.get("instance_type"), spot=request.get("is_spot"),
            location=request.get("location_code"),
        )
        return instance_id

    async def instance(self, instance_id: str) -> dict[str, Any] | None:
        """The instance, or None once Verda no longer knows it."""
        try:
            body = await self._call("GET", f"/instances/{instance_id}", f"read instance {instance_id}")
        except Gone:
            return None
        return body if isinstance(body, dict) else None

    async def instances(self) -> list[dict[str, Any]]:
        body = await self._call("GET", "/instances", "list instances")
        return [row for row in body or [] if isinstance(row, dict)]

    async def delete_instances(self, ids: list[str]) -> None:
        """`PUT /instances` with the delete action; one already gone is not an error."""
        await self._delete(
            "PUT", "/instances", f"delete {', '.join(ids)}", json={"id": list(ids), "action": "delete"}
        )


def gone(row: dict[str, Any] | None) -> bool:
    return row is None or str(row.get("status") or "") in GONE_STATUSES


def _id(body: Any) -> str:
    """Verda answers a creation with the new id as plain text (sometimes JSON-quoted)."""
    if isinstance(body, dict) and body.get("id"):
        return str(body["id"])
    text = str(body or "").strip().strip('"')
    if not text:
        raise ProvisionError(f"Verda answered a creation without an id: {body!r}")
    return text


def _error(body: Any, status: int) -> tuple[str, str]:
    if isinstance(body, dict):
        return str(body.get("code") or ""), str(body.get("message") or body.get("error") or f"HTTP {status}")
    return "", (str(body or "")[:300] or f"HTTP {status}")
