"""The few RunPod API calls the provider makes, over aiohttp, with RunPod's errors made Skyward's.

Endpoints (RunPod REST API v1, https://rest.runpod.io/v1, `Authorization: Bearer <key>`):

- `POST /pods` creates a pod (docs: "Create a new Pod");
- `GET /pods/{podId}` reads one back (docs: "Find a Pod by ID");
- `GET /pods` lists them (docs: "List Pods"), for the pods of a pool whose creation never answered;
- `DELETE /pods/{podId}` deletes one (docs: "Delete a Pod").

REST v1 has no GPU type listing, so prices and memory come from the GraphQL API
(https://api.runpod.io/graphql, query `gpuTypes`, same bearer header; see graphql-spec.runpod.io).

Errors: a refused key is a `ProvisionError` naming `RUNPOD_API_KEY`; RunPod's "no instances
available" answers are `CapacityError` (retried by the base); anything else is a `ProvisionError`
quoting RunPod's message. The key itself is only ever in the request header.
"""

from __future__ import annotations

from typing import Any

import structlog

from skyward.errors import ProvisionError
from skyward.providers.rest import ApiErrors, Gone, JsonApi, message_of
from skyward_runpod.account import API_KEY_VARIABLE

#: How RunPod's errors read: its "no instances available" answers (spot or on-demand) are capacity.
ERRORS = ApiErrors(
    cloud="RunPod",
    credential="the API key",
    credentials=f"check {API_KEY_VARIABLE} (or RunPod(api_key=...)) and the key's permissions",
    capacity_phrases=(
        "no longer any instances available", "no instances available", "not enough free gpus",
        "out of capacity",
    ),
)
#: Skyward's log file collects the `skyward` logger tree; this provider's lines go there too.
LOGGER = "skyward.runpod"

GPU_TYPES_QUERY = """
query gpuTypes {
  gpuTypes {
    id
    displayName
    manufacturer
    memoryInGb
    maxGpuCount
    secureCloud
    communityCloud
    securePrice
    communityPrice
    secureSpotPrice
    communitySpotPrice
  }
}
"""


class RunPodAPI(JsonApi):
    """One API key and its HTTP session; `close()` when done (the provider does, at teardown)."""

    errors = ERRORS

    def __init__(self, api_key: str, rest_url: str, graphql_url: str) -> None:
        super().__init__(rest_url, {"Authorization": f"Bearer {api_key}", "Accept": "application/json"})
        self.graphql_url = graphql_url

    @property
    def rest_url(self) -> str:
        return self.url

    # -- GraphQL ---------------------------------------------------------------------------------

    async def gpu_types(self) -> list[dict[str, Any]]:
        """Every GPU type RunPod rents, with memory, clouds and prices (GraphQL `gpuTypes`)."""
        body = await self.call("POST", self.graphql_url, "list GPU types", json={"query": GPU_TYPES_QUERY})
        if not isinstance(body, dict) or body.get("errors"):
            raise ProvisionError(f"RunPod could not list GPU types: {message_of(body) or body!r}")
        types = (body.get("data") or {}).get("gpuTypes")
        if not isinstance(types, list):
            raise ProvisionError(f"RunPod's GPU type listing had no gpuTypes: {body!r}")
        return [t for t in types if isinstance(t, dict)]

    # -- REST v1 ---------------------------------------------------------------------------------

    async def create_pod(self, request: dict[str, Any]) -> dict[str, Any]:
        """`POST /pods`; the new pod (its address comes later, see `get_pod`)."""
        pod_id, body = await self.create("/pods", "create a pod", json=request)
        structlog.get_logger(LOGGER).info(
            "skyward.runpod_pod_created", pod=pod_id, name=request.get("name"),
            interruptible=request.get("interruptible"), cloud=request.get("cloudType"),
        )
        return body

    async def get_pod(self, pod_id: str) -> dict[str, Any] | None:
        """`GET /pods/{podId}`; None when RunPod no longer knows the pod."""
        body = await self.call("GET", f"/pods/{pod_id}", f"read pod {pod_id}", gone_ok=True)
        return body if isinstance(body, dict) else None

    async def list_pods(self) -> list[dict[str, Any]]:
        """`GET /pods`: every pod of the account."""
        body = await self.call("GET", "/pods", "list pods", gone_ok=True)
        return [p for p in body if isinstance(p, dict)] if isinstance(body, list) else []

    async def delete_pod(self, pod_id: str) -> bool:
        """`DELETE /pods/{podId}`; False when it was already gone (404), which is not an error."""
        try:
            await self.call("DELETE", f"/pods/{pod_id}", f"delete pod {pod_id}")
        except Gone:
            return False
        return True

