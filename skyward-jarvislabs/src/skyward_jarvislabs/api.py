"""The JarvisLabs API calls the provider makes, over aiohttp, with its errors made Skyward's.

JarvisLabs' official SDK (`jarvislabs` on PyPI, github.com/jarvislabsai/jarvislabs) is the
reference for this module: it is read, not imported (docs/jarvislabs.md says why). What the SDK
shows, and this module follows as written:

- `Authorization: Bearer <key>`; one backend per region (`account.REGION_URLS`): a create and a
  destroy go to the machine's region's, listings to the default region's;
- `GET /misc/server_meta`: `{"server_meta": [{"gpu_type", "region", "num_free_devices",
  "effective_num_free_devices", "spot_num_free_devices", "price_per_hour", "spot_price", "vram",
  "cpus_per_gpu", "ram_per_gpu", "workload_type"}, ...]}`;
- `GET /users/fetch`: `{"success": true, "instances": [...]}`; `GET /users/fetch/{machine_id}`:
  `{"success": true, "instance": {"machine_id", "name", "status", "ssh_str", "gpu_type",
  "num_gpus", "region", "template", "cost", "public_ip", ...}}`;
- `POST /templates/{template}/create` with `gpu_type`, `num_gpus`, `hdd`, `region`, `name`,
  `is_spot`, `duration`, `disk_type`, `http_ports`, `script_id`, `script_args`, `fs_id`,
  `arguments`, answering `{"machine_id": ...}`;
- `POST /misc/destroy?machine_id=` (a container; `/templates/vm/destroy` a VM), answering
  `{"success": true}`; statuses "Creating", "Running", "Paused", "Failed", "Destroying";
- a startup script uploaded as a file (`POST /scripts/add?name=`, multipart field `script`),
  listed by `GET /scripts/` as `{"script_meta": [{"script_id", "script_name"}]}`, deleted by
  `DELETE /scripts/?script_id=`;
- errors carry their text in `message`, `error` or `detail`; 401 is a refused key, 404 not found,
  and an answer of 200 may still say `{"success": false, "message": ...}`.

What the SDK leaves out, modelled here (and only here, so a correction is one edit): the words of
a "no free GPUs" refusal (`ERRORS.capacity_phrases`, or a 503); `price_per_hour` and `spot_price`
are per GPU; a script's id is found by its name after the upload (the upload answers none).
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward.errors import ProvisionError
from skyward.providers.rest import ApiErrors, JsonApi
from skyward_jarvislabs.account import API_KEY_VARIABLE, API_URL, region_url

LOGGER = "skyward.jarvislabs"
ERRORS = ApiErrors(
    cloud="JarvisLabs",
    credential="the API key",
    credentials=f"check {API_KEY_VARIABLE} (or JarvisLabs(api_key=...))",
    capacity_phrases=(
        "no free",
        "not available",
        "out of stock",
        "sold out",
        "no capacity",
        "try again later",
    ),
    advice={"balance": "add funds to the JarvisLabs account"},
)
#: Statuses of a machine that will not come up, and of one that no longer bills compute.
FAILED_STATUSES = ("failed", "error")
GONE_STATUSES = ("destroyed", "deleted")


def succeeded(body: Any) -> bool:
    """JarvisLabs' success flag (sometimes spelled "sucess", sometimes a string)."""
    if not isinstance(body, dict):
        return False
    flag = body.get("success", body.get("sucess"))
    return flag.lower() == "true" if isinstance(flag, str) else bool(flag)


class JarvisAPI(JsonApi):
    """One API key and its HTTP session; `close()` when done. `override` stands in for every
    region's backend (a proxy, the tests' fake)."""

    errors = ERRORS

    def __init__(self, api_key: str, override: str | None = None) -> None:
        super().__init__(
            override or API_URL, {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        )
        self.override = override

    def at(self, region: str) -> str:
        return region_url(region, self.override).rstrip("/")

    async def server_meta(self) -> list[dict[str, Any]]:
        """One row per GPU type and region: free GPUs and prices."""
        body = await self.call("GET", "/misc/server_meta", "list GPU types")
        rows = body.get("server_meta") if isinstance(body, dict) else None
        return [row for row in rows or [] if isinstance(row, dict)]

    async def instances(self) -> list[dict[str, Any]]:
        body = await self.call("GET", "/users/fetch", "list instances")
        self._check(body, "list instances")
        return [row for row in body.get("instances") or [] if isinstance(row, dict)]

    async def instance(self, machine_id: str) -> dict[str, Any] | None:
        """The machine, or None once JarvisLabs no longer lists it."""
        body = await self.call(
            "GET", f"/users/fetch/{machine_id}", f"read instance {machine_id}", gone_ok=True
        )
        row = body.get("instance") if succeeded(body) else None
        return row if isinstance(row, dict) else None

    async def launch(self, template: str, request: dict[str, Any]) -> str:
        """Create one instance; its machine id."""
        url = f"{self.at(request['region'])}/templates/{template}/create"
        body = await self.call("POST", url, f"create a {request['gpu_type']} instance", json=request)
        machine_id = str(body.get("machine_id") or "") if isinstance(body, dict) else ""
        if not machine_id:
            self._check({**body, "success": False} if isinstance(body, dict) else body, "create an instance")
        structlog.get_logger(LOGGER).info(
            "skyward.jarvislabs_instance_created",
            instance=machine_id,
            name=request.get("name"),
            gpu=request.get("gpu_type"),
            region=request.get("region"),
            spot=request.get("is_spot"),
        )
        return machine_id

    async def destroy(self, machine_id: str, region: str, template: str) -> None:
        """Destroy a machine (its disk too); one already gone is not an error."""
        route = "/templates/vm/destroy" if template == "vm" else "/misc/destroy"
        what = f"destroy instance {machine_id}"
        body = await self.call(
            "POST", self.at(region) + route, what, params={"machine_id": machine_id}, gone_ok=True
        )
        if body is not None:
            self._check(body, what)

    async def add_script(self, name: str, text: str) -> str:
        """Upload a startup script; its id (looked up by its name: the upload answers none)."""
        import aiohttp

        # A multipart writer, not a FormData: it can be sent again when a 429 is waited out.
        form = aiohttp.MultipartWriter("form-data")
        part = form.append(text.encode(), {"Content-Type": "application/x-sh"})
        part.set_content_disposition("form-data", name="script", filename="startup.sh")
        await self.call("POST", "/scripts/add", f"upload script {name}", params={"name": name}, data=form)
        for script_id, script_name in await self.scripts():
            if script_name == name:
                return script_id
        raise ProvisionError(f"JarvisLabs does not list the startup script {name} just uploaded")

    async def scripts(self) -> list[tuple[str, str]]:
        """(id, name) of every startup script on the account."""
        body = await self.call("GET", "/scripts/", "list startup scripts")
        rows = body.get("script_meta") if isinstance(body, dict) else None
        return [
            (str(r.get("script_id")), str(r.get("script_name") or ""))
            for r in rows or []
            if isinstance(r, dict)
        ]

    async def delete_script(self, script_id: str) -> None:
        await self.call(
            "DELETE", "/scripts/", f"delete script {script_id}", params={"script_id": script_id}, gone_ok=True
        )

    def _check(self, body: Any, what: str) -> None:
        """A 200 that says `success: false` read as the error it is."""
        if not succeeded(body):
            raise self.errors.reading(400, body, what)


def gone(row: dict[str, Any] | None) -> bool:
    """Whether the machine bills no more: not listed, or listed as destroyed."""
    return row is None or str(row.get("status") or "").lower() in GONE_STATUSES
