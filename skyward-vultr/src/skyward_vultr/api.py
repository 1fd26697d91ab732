"""The Vultr API v2 calls the provider makes, over aiohttp, with Vultr's errors made Skyward's.

Endpoints (https://api.vultr.com/v2, `Authorization: Bearer <VULTR_API_KEY>`); every answer wraps
what it returns in its kind's name (`{"instance": {...}}`, `{"instances": [...], "meta": ...}`),
and lists are paged by cursor (`per_page` up to 500, `meta.links.next`):

- `GET /plans?type=vcg`: Cloud GPU plans, each with `gpu_type`, `gpu_vram_gb`, its vCPUs and
  RAM (MB), `hourly_cost` / `monthly_cost` (USD) and the regions it can be deployed in now;
- `POST|GET /ssh-keys`, `DELETE /ssh-keys/{id}`: the pool's login key;
- `POST|GET /firewalls`, `POST /firewalls/{id}/rules`, `DELETE /firewalls/{id}`: the pool's
  firewall group, SSH open to the client's address only;
- `POST /instances` (202, `{"instance": ...}`), `GET /instances?tag=&label=`,
  `GET /instances/{id}`, `DELETE /instances/{id}` (204).

Errors arrive as `{"error": "...", "status": N}`: a refused key (401, 403) is a `ProvisionError`
naming `VULTR_API_KEY` and the key's access control; a plan a region cannot deploy now is a
`CapacityError` the base retries (falling over to the next offer first); a 404 is `Gone`. The key
only ever travels in the request header.
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward.providers.rest import ApiErrors, Gone, JsonApi
from skyward_vultr.account import API_KEY_VARIABLE, TAG

LOGGER = "skyward.vultr"
ERRORS = ApiErrors(
    cloud="Vultr",
    credential="the API key",
    credentials=(
        f"check {API_KEY_VARIABLE} (or Vultr(api_key=...)) and that the key's access control "
        "allows this address"
    ),
    capacity_phrases=(
        "not available in the selected region",
        "out of stock",
        "sold out",
        "insufficient capacity",
        "no capacity",
    ),
    gone_phrases=("not found", "invalid instance-id"),
    advice={
        "insufficient funds": "add funds to the Vultr account",
        "maximum number": "ask Vultr to raise the account's limit",
    },
)
#: Vultr's largest page.
PAGE_SIZE = 500

#: Gone is core's: the names the provider imports from here.
__all__ = ["LOGGER", "TAG", "Gone", "VultrAPI"]


class VultrAPI(JsonApi):
    """One API key and its HTTP session; `close()` when done."""

    errors = ERRORS

    def __init__(self, api_key: str, url: str) -> None:
        super().__init__(url, {"Authorization": f"Bearer {api_key}", "Accept": "application/json"})

    async def _pages(self, path: str, kind: str, what: str, **params: str) -> list[dict[str, Any]]:
        """Every row of a paged listing (`kind` names the list in each answer)."""
        found: list[dict[str, Any]] = []
        cursor = ""
        while True:
            query = {**params, "per_page": str(PAGE_SIZE), **({"cursor": cursor} if cursor else {})}
            body = await self.call("GET", path, what, params=query)
            rows = body.get(kind) if isinstance(body, dict) else None
            found += [row for row in rows or [] if isinstance(row, dict)]
            meta = body.get("meta") if isinstance(body, dict) else None
            links = meta.get("links") if isinstance(meta, dict) else None
            cursor = str((links or {}).get("next") or "") if isinstance(links, dict) else ""
            if not cursor or not rows:
                return found

    # -- plans -------------------------------------------------------------------------------------

    async def plans(self, kind: str = "vcg") -> list[dict[str, Any]]:
        """The plans of one type: "vcg" (Cloud GPU), "vc2" (regular CPU)."""
        return await self._pages("/plans", "plans", "list plans", type=kind)

    # -- keys and firewalls ------------------------------------------------------------------------

    async def add_ssh_key(self, name: str, key: str) -> str:
        body = {"name": name, "ssh_key": key}
        key_id, _ = await self.create("/ssh-keys", "register the pool's SSH key", within="ssh_key", json=body)
        return key_id

    async def delete_ssh_key(self, key_id: str) -> None:
        await self.call("DELETE", f"/ssh-keys/{key_id}", f"delete SSH key {key_id}", gone_ok=True)

    async def ssh_keys(self) -> list[dict[str, Any]]:
        return await self._pages("/ssh-keys", "ssh_keys", "list SSH keys")

    async def add_firewall(self, description: str) -> str:
        group_id, _ = await self.create(
            "/firewalls",
            "create the pool's firewall group",
            within="firewall_group",
            json={"description": description},
        )
        return group_id

    async def allow(self, group_id: str, address: str, prefix: int, version: int, port: int) -> None:
        """Let `address/prefix` reach TCP `port` through the group (nothing else gets in)."""
        rule = {
            "ip_type": f"v{version}",
            "protocol": "tcp",
            "subnet": address,
            "subnet_size": prefix,
            "port": str(port),
            "notes": "skyward: SSH from the pool's client",
        }
        await self.call("POST", f"/firewalls/{group_id}/rules", "open SSH to this client", json=rule)

    async def delete_firewall(self, group_id: str) -> None:
        await self.call("DELETE", f"/firewalls/{group_id}", f"delete firewall group {group_id}", gone_ok=True)

    async def firewalls(self) -> list[dict[str, Any]]:
        return await self._pages("/firewalls", "firewall_groups", "list firewall groups")

    # -- instances ---------------------------------------------------------------------------------

    async def create_instance(self, request: dict[str, Any]) -> dict[str, Any]:
        """`POST /instances`: the new instance's row (its id, and `default_password`, unused)."""
        instance_id, row = await self.create(
            "/instances", "create an instance", within="instance", json=request
        )
        structlog.get_logger(LOGGER).info(
            "skyward.vultr_instance_created",
            instance=instance_id,
            label=request.get("label"),
            plan=request.get("plan"),
            region=request.get("region"),
        )
        return row if isinstance(row, dict) else {"id": instance_id}

    async def instance(self, instance_id: str) -> dict[str, Any] | None:
        """The instance, or None once Vultr no longer knows it."""
        body = await self.call(
            "GET", f"/instances/{instance_id}", f"read instance {instance_id}", gone_ok=True
        )
        row = body.get("instance") if isinstance(body, dict) else None
        return row if isinstance(row, dict) else None

    async def instances(self, **filters: str) -> list[dict[str, Any]]:
        """The account's instances (`tag=`, `label=`, `region=` narrow the listing)."""
        return await self._pages("/instances", "instances", "list instances", **filters)

    async def delete_instance(self, instance_id: str) -> None:
        """`DELETE /instances/{id}`; one already gone is not an error."""
        await self.call("DELETE", f"/instances/{instance_id}", f"delete instance {instance_id}", gone_ok=True)
