"""The Scaleway Instance API v1 calls the provider makes, through the official `scaleway` SDK,
with Scaleway's errors made Skyward's.

The SDK is synchronous (requests): each call runs on a worker thread, so a pool's event loop never
waits on a socket. Endpoints (`{api_url}/instance/v1/zones/{zone}`, `X-Auth-Token: <secret key>`):

- `GET /products/servers`: every commercial type with its hourly price (EUR), vCPUs, RAM and GPUs;
- `POST|GET /security_groups`, `POST /security_groups/{id}/rules`, `DELETE /security_groups/{id}`:
  the pool's group, inbound traffic dropped but SSH from the client's address;
- `POST /servers` (created stopped), `PATCH /servers/{id}/user_data/cloud-init`,
  `POST /servers/{id}/action` (`poweron`, `terminate`), `GET /servers?tags=&name=`,
  `GET /servers/{id}`, `DELETE /servers/{id}` (a server never powered on);
- `PATCH|GET|DELETE /block/v1/zones/{zone}/volumes/{id}`, `GET /block/v1/zones/{zone}/volumes?tags=`:
  a server's Block Storage volume, which neither `terminate` nor `DELETE /servers/{id}` deletes
  (they detach it, and it bills on). It is given the server's name and Skyward's tag at creation,
  so one left by a server that terminated itself is still found without the server.

Errors arrive as `{"type": "...", "message": "..."}`: a refused key (401, 403) is a
`ProvisionError` naming the credentials; `out_of_stock` (a type the zone has none of now) is a
`CapacityError` the pool falls over on; a 404 is `Gone`. The secret key only travels in the header.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

from skyward.errors import ProvisionError
from skyward.providers.rest import ApiErrors, Gone
from skyward_scaleway.account import NEEDED, TAG, Credentials

LOGGER = "skyward.scaleway"
ERRORS = ApiErrors(
    cloud="Scaleway",
    credential="the secret key",
    credentials=(
        f"check {NEEDED} (or Scaleway(secret_key=..., access_key=..., project_id=...)) "
        "and the key's IAM policy"
    ),
    capacity_phrases=("out_of_stock", "out of stock", "no more available", "shortage"),
    gone_phrases=("not_found", "not found", "unknown_resource"),
    advice={"quotas_exceeded": "ask Scaleway to raise the project's quota (console: Organization, Quotas)"},
)
#: Scaleway's largest page.
PAGE_SIZE = 100
#: The user data key cloud-init reads on a Scaleway server.
CLOUD_INIT = "cloud-init"
T = TypeVar("T")

__all__ = ["CLOUD_INIT", "LOGGER", "TAG", "Gone", "ScalewayAPI"]


class _NoUserData(logging.Filter):
    """The SDK logs each request's body at DEBUG (the token masked, the body not): a user data
    request carries the pool's private host key and the guardian's key, so its record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "/user_data/" not in record.getMessage()


_SDK_LOG = logging.getLogger("scaleway")
if not any(isinstance(f, _NoUserData) for f in _SDK_LOG.filters):
    _SDK_LOG.addFilter(_NoUserData())


class ScalewayAPI:
    """One set of credentials and its SDK client; `close()` is for symmetry with the kit's clients."""

    errors = ERRORS
    cloud = "Scaleway"

    def __init__(self, credentials: Credentials, url: str) -> None:
        from scaleway import Client
        from scaleway.block.v1 import BlockV1API
        from scaleway.instance.v1.custom_api import InstanceUtilsV1API

        self.url = url.rstrip("/")
        self.project = credentials.project_id
        client = Client(
            access_key=credentials.access_key,
            secret_key=credentials.secret_key,
            default_project_id=credentials.project_id,
            api_url=self.url,
        )
        try:
            self.sdk = InstanceUtilsV1API(client)
            self.block = BlockV1API(client)
        except ValueError as exc:  # the SDK checks the keys' shapes
            raise ProvisionError(f"Scaleway: {exc}; {ERRORS.credentials}") from None

    def __repr__(self) -> str:
        return f"ScalewayAPI(url={self.url!r})"

    async def close(self) -> None:
        return None

    async def _call(self, what: str, call: Callable[[], T], *, gone_ok: bool = False) -> T | None:
        """`call()` on a thread; the SDK's error read as the kit reads every cloud's."""
        from requests import RequestException
        from scaleway_core.api import ScalewayException

        try:
            return await asyncio.to_thread(call)
        except ScalewayException as exc:
            error = self._reading(exc, what)
            if gone_ok and isinstance(error, Gone):
                return None
            raise error from None
        except RequestException as exc:
            raise ProvisionError(f"Scaleway: could not {what}: {self.url} did not answer ({exc})") from None

    def _reading(self, exc: Any, what: str) -> ProvisionError:
        try:
            body = exc.response.json()
        except ValueError:
            body = exc.response.text
        if isinstance(body, dict) and body.get("type"):
            body = {**body, "code": body["type"]}
        return self.errors.reading(int(exc.status_code or 500), body, what)

    # -- products ----------------------------------------------------------------------------------

    async def server_types(self, zone: str) -> dict[str, Any]:
        """Every commercial type of the zone, by name (read page by page)."""
        found: dict[str, Any] = {}
        page = 1
        while True:
            answer = await self._call(
                f"list the server types of {zone}",
                lambda p=page: self.sdk.list_servers_types(zone=zone, page=p, per_page=PAGE_SIZE),
            )
            assert answer is not None
            found.update(answer.servers or {})
            if not answer.servers or len(found) >= int(answer.total_count or 0):
                return found
            page += 1

    # -- security groups ---------------------------------------------------------------------------

    async def add_security_group(self, zone: str, name: str) -> str:
        """A group that drops inbound traffic (stateful: answers get back) and lets outbound out."""
        answer = await self._call(
            "create the pool's security group",
            lambda: self.sdk.create_security_group(
                zone=zone,
                name=name,
                description="skyward: SSH from the pool's client only",
                stateful=True,
                inbound_default_policy="drop",
                outbound_default_policy="accept",
                project=self.project,
                tags=[TAG],
            ),
        )
        assert answer is not None and answer.security_group is not None
        return str(answer.security_group.id)

    async def allow(self, zone: str, group_id: str, cidr: str, port: int) -> None:
        """Let `cidr` reach TCP `port` through the group (nothing else gets in)."""
        await self._call(
            "open SSH to this client",
            lambda: self.sdk.create_security_group_rule(
                zone=zone,
                security_group_id=group_id,
                protocol="TCP",
                direction="inbound",
                action="accept",
                ip_range=cidr,
                dest_port_from=port,
                editable=True,
                position=1,
            ),
        )

    async def delete_security_group(self, zone: str, group_id: str) -> None:
        await self._call(
            f"delete security group {group_id}",
            lambda: self.sdk.delete_security_group(zone=zone, security_group_id=group_id),
            gone_ok=True,
        )

    async def security_groups(self, zone: str, name: str | None = None) -> list[Any]:
        answer = await self._call(
            "list security groups",
            lambda: self.sdk.list_security_groups_all(zone=zone, name=name, project=self.project),
        )
        return list(answer or [])

    # -- servers -----------------------------------------------------------------------------------

    async def create_server(self, zone: str, **request: Any) -> Any:
        """`POST /servers`: the new server, stopped (its user data is set before it powers on)."""
        answer = await self._call(
            "create a server", lambda: self.sdk.create_server(zone=zone, project=self.project, **request)
        )
        assert answer is not None and answer.server is not None
        structlog.get_logger(LOGGER).info(
            "skyward.scaleway_server_created",
            server=answer.server.id,
            name=request.get("name"),
            commercial_type=request.get("commercial_type"),
            zone=zone,
        )
        return answer.server

    async def set_cloud_init(self, zone: str, server_id: str, script: str) -> None:
        await self._call(
            "set the server's cloud-init user data",
            lambda: self.sdk.set_server_user_data(
                server_id=server_id, key=CLOUD_INIT, content=script.encode(), zone=zone
            ),
        )

    async def action(self, zone: str, server_id: str, action: str, *, gone_ok: bool = False) -> None:
        """`poweron` or `terminate` (the server and its local volumes deleted)."""
        await self._call(
            f"{action} server {server_id}",
            lambda: self.sdk.server_action(zone=zone, server_id=server_id, action=action),
            gone_ok=gone_ok,
        )

    async def delete_server(self, zone: str, server_id: str) -> None:
        """`DELETE /servers/{id}`: a server that never powered on; one gone already is fine."""
        await self._call(
            f"delete server {server_id}",
            lambda: self.sdk.delete_server(zone=zone, server_id=server_id),
            gone_ok=True,
        )

    async def server(self, zone: str, server_id: str) -> Any | None:
        """The server, or None once Scaleway no longer knows it."""
        answer = await self._call(
            f"read server {server_id}",
            lambda: self.sdk.get_server(zone=zone, server_id=server_id),
            gone_ok=True,
        )
        return None if answer is None else answer.server

    async def servers(self, zone: str, name: str | None = None) -> list[Any]:
        """The project's servers that carry Skyward's tag (`name` narrows to names containing it)."""
        answer = await self._call(
            "list servers",
            lambda: self.sdk.list_servers_all(zone=zone, tags=[TAG], name=name, project=self.project),
        )
        return list(answer or [])

    # -- block volumes -----------------------------------------------------------------------------

    async def mark_volume(self, zone: str, volume_id: str, name: str) -> None:
        """Give a server's volume the server's name and Skyward's tag: when the server's guardian
        terminates it, the volume stays, detached, and only its own name says whose it was."""
        await self._call(
            f"tag block volume {volume_id}",
            lambda: self.block.update_volume(zone=zone, volume_id=volume_id, name=name, tags=[TAG]),
        )

    async def volumes(self, zone: str) -> list[Any]:
        """The project's Block Storage volumes that carry Skyward's tag, attached or not."""
        answer = await self._call(
            "list block volumes",
            lambda: self.block.list_volumes_all(
                zone=zone, include_deleted=False, tags=[TAG], project_id=self.project
            ),
        )
        return list(answer or [])

    async def volume(self, zone: str, volume_id: str) -> Any | None:
        """One volume, None once deleted."""
        return await self._call(
            f"read block volume {volume_id}",
            lambda: self.block.get_volume(zone=zone, volume_id=volume_id),
            gone_ok=True,
        )

    async def delete_volume(self, zone: str, volume_id: str) -> None:
        """Delete a detached Block Storage volume; one gone already is fine (refused while in use)."""
        await self._call(
            f"delete block volume {volume_id}",
            lambda: self.block.delete_volume(zone=zone, volume_id=volume_id),
            gone_ok=True,
        )


def block_volumes(server: Any) -> list[str]:
    """The ids of a server's Block Storage volumes (its boot volume among them)."""
    volumes = getattr(server, "volumes", None) or {}
    return [str(v.id) for v in volumes.values() if str(getattr(v, "volume_type", "")) == "sbs_volume"]
