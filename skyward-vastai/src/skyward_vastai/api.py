"""Vast.ai's REST API through the `vastai-sdk`, made async and given Skyward's errors.

The SDK is synchronous (`requests`), so every call runs in a thread (`asyncio.to_thread`) and
never blocks the pool's event loop. The methods used and the endpoints they call:

- `search_offers`   -> POST   /api/v0/bundles/          (a filter dict; `no_default=True`, so the
  filters are exactly the ones we build and nothing is added behind our back)
- `create_instance` -> PUT    /api/v0/asks/{offer}/     (returns `new_contract`, the instance id)
- `show_instance`   -> GET    /api/v0/instances/{id}/?owner=me
- `show_instances`  -> GET    /api/v1/instances/        (every page: the SDK follows `next_token`
  with `after_token`, 25 rows at a time, and returns one flat list)
- `destroy_instance`-> DELETE /api/v0/instances/{id}/
- `label_instance`  -> PUT    /api/v0/instances/{id}/   (`{"label": ...}`: the pool's lease mark)

None of them prints (the SDK prints only with `explain=`/`curl=`, which stay off). Failures come
back as `requests` exceptions; `_sync` reads them as every REST cloud's are read
(`skyward.providers.rest.ApiErrors`: refused key, gone, no capacity, rate limit), with a message
that names the call and never the key (the key travels in a header, not the URL).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from skyward.errors import CapacityError, ProvisionError
from skyward.providers.rest import ApiErrors, Gone
from skyward_vastai.account import API_KEY_VARIABLE

T = TypeVar("T")

ERRORS = ApiErrors(
    cloud="vastai",
    credential="the API key",
    credentials=f"the API key was refused: check {API_KEY_VARIABLE} or VastAI(api_key=...)",
    gone_phrases=("no_such_instance", "not found", "does not exist"),
    advice={word: "add credit at https://cloud.vast.ai/billing/" for word in ("credit", "balance")},
)
#: Renting an offer: what Vast answers when it was rented by someone else meanwhile or the machine
#: can no longer fit the request (a 404 too) is capacity, retried with the next offer.
RENTING = attrs.evolve(ERRORS, capacity_phrases=(
    "no_such_ask", "not available", "no longer available", "unavailable", "already rented",
))


def _body(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return (response.text or "")[:200]


class VastAPI:
    """One account's client: the SDK object, built lazily (importing it takes a moment)."""

    def __init__(self, api_key: str, server_url: str) -> None:
        self._key = api_key
        self._url = server_url
        self._sdk: Any = None

    def __repr__(self) -> str:
        return f"VastAPI(server_url={self._url!r})"

    @property
    def sdk(self) -> Any:
        if self._sdk is None:
            from vastai import VastAI as VastSDK

            self._sdk = VastSDK(api_key=self._key, server_url=self._url)
        return self._sdk

    async def close(self) -> None:
        """Nothing to close: the SDK opens a `requests` call per request."""

    # -- calls -------------------------------------------------------------------------------------

    def search_now(
        self, query: dict[str, Any], kind: str, disk_gb: float, limit: int
    ) -> list[dict[str, Any]]:
        """Offers matching `query` (`kind` "on-demand" or "bid"), cheapest first; synchronous."""
        return self._sync("search offers", lambda: self.sdk.search_offers(
            query=dict(query), type=kind, order="dph_total", limit=limit, storage=disk_gb, no_default=True,
        ))

    async def search(
        self, query: dict[str, Any], kind: str, disk_gb: float, limit: int
    ) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.search_now, query, kind, disk_gb, limit)

    async def create(self, offer_id: int, **fields: Any) -> int:
        """Rent offer `offer_id`; the new instance's id. `CapacityError` when the offer is gone."""
        result = await asyncio.to_thread(
            self._sync, f"create an instance from offer {offer_id}",
            lambda: self.sdk.create_instance(offer_id, **fields), RENTING,
        )
        contract = result.get("new_contract") if isinstance(result, dict) else None
        if not result.get("success", True) or not contract:
            error = RENTING.reading(400, result, f"rent offer {offer_id}")
            if isinstance(error, CapacityError | Gone):
                raise CapacityError(f"vastai: offer {offer_id} is no longer available ({error})")
            raise error
        return int(contract)

    async def show(self, instance_id: int) -> dict[str, Any] | None:
        """The instance's row, or None once it no longer exists."""
        try:
            return await asyncio.to_thread(
                self._sync, f"read instance {instance_id}", lambda: self.sdk.show_instance(instance_id)
            )
        except Gone:
            return None

    async def instances(self) -> list[dict[str, Any]]:
        """Every instance of the account, all pages read: how `leftovers` finds, by label, a machine
        whose create call never answered (so its id was never learnt)."""
        rows = await asyncio.to_thread(self._sync, "list instances", lambda: self.sdk.show_instances())
        return [row for row in rows or [] if isinstance(row, dict)]

    async def label(self, instance_id: int, label: str) -> None:
        """Give the instance a new label (how a pool renews the lease its label carries)."""
        await asyncio.to_thread(
            self._sync, f"label instance {instance_id}", lambda: self.sdk.label_instance(instance_id, label)
        )

    async def destroy(self, instance_id: int) -> None:
        """Destroy the instance; one already gone is fine (destroy must be idempotent)."""
        try:
            await asyncio.to_thread(
                self._sync, f"destroy instance {instance_id}", lambda: self.sdk.destroy_instance(instance_id)
            )
        except Gone:
            return

    # -- errors ------------------------------------------------------------------------------------

    def _sync(self, what: str, call: Callable[[], T], errors: ApiErrors = ERRORS) -> T:
        import requests  # the SDK's HTTP library, loaded with the SDK (see `sdk`), not before

        try:
            return call()
        except requests.HTTPError as exc:
            response = exc.response
            status = response.status_code if response is not None else 0
            error = errors.reading(status, _body(response) if response is not None else None, what)
            if errors is RENTING and isinstance(error, Gone):
                raise CapacityError(f"vastai: could not {what}: {error}") from None
            raise error from None
        except requests.RequestException as exc:
            raise ProvisionError(
                f"vastai: could not {what}: {self._url} did not answer ({type(exc).__name__}); "
                "check the network or VastAI(server_url=...)"
            ) from None
