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

from skyward.errors import CapacityError, ProvisionError
from skyward.providers.rest import JsonApi
from skyward_runpod.account import API_KEY_VARIABLE

#: Phrases RunPod uses when it has no machine for the request right now (spot or on-demand).
CAPACITY_PHRASES = (
    "no longer any instances available",
    "no instances available",
    "not enough free gpus",
    "out of capacity",
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


def is_capacity_message(message: str) -> bool:
    text = message.lower()
    return any(phrase in text for phrase in CAPACITY_PHRASES)


class RunPodAPI(JsonApi):
    """One API key and its HTTP session; `close()` when done (the provider does, at teardown)."""

    cloud = "RunPod"

    def __init__(self, api_key: str, rest_url: str, graphql_url: str) -> None:
        super().__init__(rest_url, {"Authorization": f"Bearer {api_key}", "Accept": "application/json"})
        self.graphql_url = graphql_url

    def __repr__(self) -> str:
        return f"RunPodAPI(rest_url={self.rest_url!r})"

    @property
    def rest_url(self) -> str:
        return self.url

    def unreachable(self, what: str, error: BaseException) -> str:
        return f"RunPod: {what} failed, the API did not answer ({type(error).__name__}: {error})"

    async def _call(self, method: str, url: str, what: str, **kwargs: Any) -> tuple[int, Any]:
        """(status, parsed JSON or text); raises for a refused key and for errors other than 404."""
        status, body = await self.send(method, url, what, **kwargs)
        if status in (401, 403):
            raise ProvisionError(
                f"RunPod refused the API key ({status}) when asked to {what}: check {API_KEY_VARIABLE} "
                "(or RunPod(api_key=...)) and the key's permissions"
            )
        if status >= 400 and status != 404:
            message = _message(body) or f"HTTP {status}"
            if is_capacity_message(message):
                raise CapacityError(f"RunPod has no capacity to {what}: {message}")
            raise ProvisionError(f"RunPod could not {what} ({status}): {message}")
        return status, body

    # -- GraphQL ---------------------------------------------------------------------------------

    async def gpu_types(self) -> list[dict[str, Any]]:
        """Every GPU type RunPod rents, with memory, clouds and prices (GraphQL `gpuTypes`)."""
        _, body = await self._call(
            "POST", self.graphql_url, "list GPU types", json={"query": GPU_TYPES_QUERY}
        )
        if not isinstance(body, dict) or body.get("errors"):
            raise ProvisionError(f"RunPod could not list GPU types: {_message(body) or body!r}")
        types = (body.get("data") or {}).get("gpuTypes")
        if not isinstance(types, list):
            raise ProvisionError(f"RunPod's GPU type listing had no gpuTypes: {body!r}")
        return [t for t in types if isinstance(t, dict)]

    # -- REST v1 ---------------------------------------------------------------------------------

    async def create_pod(self, request: dict[str, Any]) -> dict[str, Any]:
        """`POST /pods`; the new pod (its address comes later, see `get_pod`)."""
        status, body = await self._call("POST", f"{self.rest_url}/pods", "create a pod", json=request)
        if status == 404 or not isinstance(body, dict) or not body.get("id"):
            raise ProvisionError(f"RunPod answered a pod creation without a pod ({status}): {body!r}")
        structlog.get_logger(LOGGER).info(
            "skyward.runpod_pod_created", pod=body["id"], name=request.get("name"),
            interruptible=request.get("interruptible"), cloud=request.get("cloudType"),
        )
        return body

    async def get_pod(self, pod_id: str) -> dict[str, Any] | None:
        """`GET /pods/{podId}`; None when RunPod no longer knows the pod."""
        status, body = await self._call("GET", f"{self.rest_url}/pods/{pod_id}", f"read pod {pod_id}")
        if status == 404 or not isinstance(body, dict):
            return None
        return body

    async def list_pods(self) -> list[dict[str, Any]]:
        """`GET /pods`: every pod of the account."""
        status, body = await self._call("GET", f"{self.rest_url}/pods", "list pods")
        if status == 404 or not isinstance(body, list):
            return []
        return [p for p in body if isinstance(p, dict)]

    async def delete_pod(self, pod_id: str) -> bool:
        """`DELETE /pods/{podId}`; False when it was already gone (404), which is not an error."""
        status, _ = await self._call("DELETE", f"{self.rest_url}/pods/{pod_id}", f"delete pod {pod_id}")
        return status != 404


def _message(body: Any) -> str:
    """RunPod's error text, from `{"error": ...}`, `{"message": ...}`, GraphQL `errors` or plain text."""
    if isinstance(body, dict):
        if isinstance(body.get("errors"), list) and body["errors"]:
            first = body["errors"][0]
            return str(first.get("message", first)) if isinstance(first, dict) else str(first)
        for field in ("error", "message", "detail"):
            if body.get(field):
                return str(body[field])
        return ""
    return str(body or "")[:500]
