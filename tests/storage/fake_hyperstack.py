"""Hyperstack's object-storage access-key API on loopback, as Hyperstack documents it.

Under `/v1`, each call authenticated by the raw API key in the `api_key` header (401 otherwise):
`POST /object-storage/access-keys` with `{"region", "description"?}` (unknown fields, an unknown
region or a description over 250 characters are refused with 400) answers 201 with the new key at
the top level (`id`, `user_id`, `access_key`, `secret_key`, `region`, `description`,
`created_at`); `GET /object-storage/access-keys` lists them without secrets under `access_keys`,
with `meta`; `DELETE /object-storage/access-keys/{id}` answers 200, or 404 for an unknown id.
Every call is kept in `calls`; a key still there when the test ends is a leak (`serving`).
`delete_errors` fails that many delete calls with a 500.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, ClassVar

import attrs
from aiohttp import web
from cloud_fakes import FakeCloud, Invalid, expect, expect_fields

#: Regions the fake's object storage has.
REGIONS = ("CANADA-1",)
ACCESS_KEYS = "/v1/object-storage/access-keys"


@attrs.define
class Call:
    """One request the fake answered: its method, path and the `api_key` header it carried."""

    method: str
    path: str
    api_key: str | None


@attrs.define
class FakeHyperstack(FakeCloud):
    """The fake API; `api_key` is the only key it accepts."""

    api_key: str = attrs.field(kw_only=True)
    #: Live access keys by id, as minted (secrets included).
    keys: dict[int, dict[str, Any]] = attrs.field(factory=dict, kw_only=True)
    #: Every id ever deleted, in order.
    deleted: list[int] = attrs.field(factory=list, kw_only=True)
    calls: list[Call] = attrs.field(factory=list, kw_only=True)
    delete_errors: int = attrs.field(default=0, kw_only=True)
    _next_id: int = attrs.field(default=100, kw_only=True)

    NAME: ClassVar[str] = "Hyperstack"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        app.add_routes([
            web.post(ACCESS_KEYS, self._create),
            web.get(ACCESS_KEYS, self._list),
            web.delete(ACCESS_KEYS + "/{id}", self._delete),
        ])
        return app

    def check_nothing_left(self) -> None:
        assert not self.keys, f"access keys left behind: {sorted(self.keys)}"
        super().check_nothing_left()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.headers.get("api_key")
        self.calls.append(Call(request.method, request.path, given))
        if given != self.api_key:
            return web.json_response({"status": False, "message": "Invalid API key"}, status=401)
        return await handler(request)

    async def _create(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            expect_fields(body, {"region", "description"})
            expect(body.get("region") in REGIONS, f"unknown region {body.get('region')!r}")
            description = body.get("description")
            expect(description is None or (isinstance(description, str) and len(description) <= 250),
                   "description is a string of at most 250 characters")
        except (Invalid, ValueError) as exc:
            return web.json_response({"status": False, "message": str(exc)}, status=400)
        self._next_id += 1
        key = {
            "id": self._next_id, "user_id": 27, "access_key": "HSAK" + secrets.token_hex(8).upper(),
            "secret_key": secrets.token_urlsafe(30), "region": body["region"], "description": description,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        self.keys[key["id"]] = key
        return web.json_response(key, status=201)

    async def _list(self, request: web.Request) -> web.Response:
        rows = self.live()
        meta = {"count": len(rows), "current_page": 1, "total_pages": 1}
        return web.json_response({"access_keys": rows, "meta": meta})

    async def _delete(self, request: web.Request) -> web.Response:
        if self.delete_errors > 0:
            self.delete_errors -= 1
            return web.json_response({"status": False, "message": "Internal Server Error"}, status=500)
        raw = request.match_info["id"]
        key = self.keys.pop(int(raw), None) if raw.isdigit() else None
        if key is None:
            return web.json_response({"status": False, "message": "Access key not found"}, status=404)
        self.deleted.append(key["id"])
        return web.json_response({"status": True, "message": "Access key deleted successfully"})

    def live(self) -> list[dict[str, Any]]:
        """The keys the API still has, as its list call shows them (no secrets)."""
        return [{k: v for k, v in key.items() if k != "secret_key"} for key in self.keys.values()]
