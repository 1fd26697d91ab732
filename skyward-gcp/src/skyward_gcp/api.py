"""The Compute Engine calls the provider makes, through Google's official client
(`google-cloud-compute`, its REST transport), with Google's errors made Skyward's.

The calls (Compute Engine API v1, under `projects/{project}`):

- `zones/{zone}/machineTypes` and `zones/{zone}/acceleratorTypes` (list): what a zone offers;
- `zones` (list, filtered by region): the zones of `GCP(region=...)`;
- `zones/{zone}/instances` insert, get, list (filtered by label), delete, and
  `aggregated/instances` (every zone, for `sky ls`);
- `global/firewalls` insert, delete, list: the pool's SSH rule;
- `zones/{zone}/operations/{op}` and `global/operations/{op}` wait: an insert or delete is done
  (or failed) only when its operation is. A VM Google has no room for is an insert whose
  operation ends with `ZONE_RESOURCE_POOL_EXHAUSTED` (or `..._WITH_DETAILS`, `STOCKOUT`): a
  `CapacityError`, so the launch falls over to the next offer.

The client is synchronous (`requests`): every call runs on a thread (`asyncio.to_thread`), so
the pool's event loop never blocks. `GCP(api_endpoint=...)` points it elsewhere
(`client_options.api_endpoint`: the tests' fake, a private endpoint).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

from skyward.errors import CapacityError, ProvisionError
from skyward.providers.rest import Gone, RateLimited
from skyward.retry import retry
from skyward_gcp.account import CREDENTIALS_VARIABLE, LOGIN_COMMAND, Account

T = TypeVar("T")
LOGGER = "skyward.gcp"
CLOUD = "GCP"
#: Operation error codes that mean "no room for this VM here now" (Compute Engine's words).
CAPACITY_CODES = frozenset(
    {
        "ZONE_RESOURCE_POOL_EXHAUSTED",
        "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
        "STOCKOUT",
        "RESOURCE_POOL_EXHAUSTED",
        "insufficientCapacity",
    }
)
#: How long one operation (an insert, a delete) may take before the call gives up on it.
OPERATION_TIMEOUT = 300.0
RATE_LIMIT_WAITS = (1.0, 2.0, 4.0, 8.0)
FIX = f"check {CREDENTIALS_VARIABLE} or run `{LOGIN_COMMAND}`, and the project's IAM roles"


def _reasons(exc: Any) -> list[str]:
    found = [str(e.get("reason") or "") for e in getattr(exc, "errors", None) or [] if isinstance(e, dict)]
    return [r for r in [*found, str(getattr(exc, "reason", "") or "")] if r]


def translate(exc: BaseException, what: str) -> BaseException:
    """A `google.api_core` error as Skyward's: refused credentials name where they come from,
    404 is `Gone`, 429 or a rate limit `RateLimited`, 503 or no capacity `CapacityError`."""
    from google.api_core import exceptions as google_errors
    from google.auth.exceptions import GoogleAuthError

    if isinstance(exc, GoogleAuthError):
        return ProvisionError(f"{CLOUD} could not get a token to {what} ({exc}); {FIX}")
    if not isinstance(exc, google_errors.GoogleAPICallError):
        return ProvisionError(f"{CLOUD}: could not {what}: {type(exc).__name__}: {exc}")
    status, message, reasons = int(exc.code or 0), str(exc.message or exc), _reasons(exc)
    if "rateLimitExceeded" in reasons or status == 429:
        return RateLimited(f"{CLOUD} asks to slow down when asked to {what}: {message}")
    if "quotaExceeded" in reasons:
        return ProvisionError(f"{CLOUD}: could not {what}: {message}; ask for more quota in the console")
    if status in (401, 403):
        return ProvisionError(
            f"{CLOUD} refused the credentials ({status}: {message}) when asked to {what}: {FIX}"
        )
    if status in (404, 410):
        return Gone(f"{CLOUD}: could not {what}: {message}")
    if status == 503 or CAPACITY_CODES & set(reasons):
        return CapacityError(f"{CLOUD} has no capacity to {what}: {message}")
    return ProvisionError(f"{CLOUD} could not {what} ({status}): {message}")


def operation_error(operation: Any, what: str) -> BaseException | None:
    """The failure a finished operation reports, as Skyward's (None: it succeeded)."""
    errors = list(operation.error.errors) if operation.error else []
    if not errors:
        return None
    codes = {str(e.code) for e in errors}
    message = "; ".join(f"{e.code}: {e.message}" for e in errors)
    if codes & CAPACITY_CODES:
        return CapacityError(f"{CLOUD} has no capacity to {what}: {message}")
    if "QUOTA_EXCEEDED" in codes:
        return ProvisionError(f"{CLOUD}: could not {what}: {message}; ask for more quota in the console")
    if {"RESOURCE_NOT_FOUND", "NOT_FOUND"} & codes:
        return Gone(f"{CLOUD}: could not {what}: {message}")
    return ProvisionError(f"{CLOUD} could not {what}: {message}")


class ComputeApi:
    """One project's Compute Engine clients (made on first use); `close()` when done."""

    def __init__(self, account: Account, endpoint: str | None = None) -> None:
        self.account = account
        self.project = account.project
        self.endpoint = endpoint
        self._clients: dict[str, Any] = {}
        self._log = structlog.get_logger(LOGGER)

    def __repr__(self) -> str:
        return f"ComputeApi(project={self.project!r}, endpoint={self.endpoint!r})"

    def _client(self, kind: str) -> Any:
        if kind not in self._clients:
            from google.api_core.client_options import ClientOptions
            from google.cloud import compute_v1

            options = ClientOptions(api_endpoint=self.endpoint) if self.endpoint else None
            make = getattr(compute_v1, kind)
            self._clients[kind] = make(
                credentials=self.account.credentials, transport="rest", client_options=options
            )
        return self._clients[kind]

    async def _call(self, what: str, call: Callable[[], T]) -> T:
        """`call()` on a thread, Google's errors translated, a rate limit waited out."""

        async def once() -> T:
            try:
                return await asyncio.to_thread(call)
            except Exception as exc:  # noqa: BLE001 - every failure is translated to Skyward's
                raise translate(exc, what) from None

        return await retry(once, retry_on=RateLimited, delays=RATE_LIMIT_WAITS)

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await asyncio.to_thread(client.transport.close)

    # -- catalog -------------------------------------------------------------------------------------

    async def machine_types(self, zone: str) -> list[Any]:
        client = self._client("MachineTypesClient")
        what = f"list the machine types of {zone}"
        return await self._call(what, lambda: list(client.list(project=self.project, zone=zone)))

    async def accelerator_types(self, zone: str) -> list[Any]:
        client = self._client("AcceleratorTypesClient")
        what = f"list the accelerator types of {zone}"
        return await self._call(what, lambda: list(client.list(project=self.project, zone=zone)))

    async def zones(self, region: str) -> list[str]:
        """The zones of `region` that are up, in name order."""
        client = self._client("ZonesClient")
        rows = await self._call(
            f"list the zones of {region}", lambda: list(client.list(project=self.project))
        )
        return sorted(z.name for z in rows if z.region.rsplit("/", 1)[-1] == region and z.status != "DOWN")

    # -- operations ----------------------------------------------------------------------------------

    async def _wait(self, operation: Any, what: str, zone: str | None) -> None:
        """Wait until `operation` is done; its failure raised as Skyward's (`operation_error`)."""
        from google.cloud import compute_v1

        done = compute_v1.Operation.Status.DONE
        deadline = time.monotonic() + OPERATION_TIMEOUT
        while operation.status != done:
            if time.monotonic() > deadline:
                raise ProvisionError(
                    f"{CLOUD}: {what} did not finish in {OPERATION_TIMEOUT:.0f} s ({operation.name})"
                )
            operation = await self._call(what, self._waiter(operation.name, zone))
        failed = operation_error(operation, what)
        if failed is not None:
            raise failed

    def _waiter(self, name: str, zone: str | None) -> Callable[[], Any]:
        """One call of the operation's wait (it answers when done, or after at most two minutes)."""
        if zone is None:
            client = self._client("GlobalOperationsClient")
            return lambda: client.wait(project=self.project, operation=name)
        client = self._client("ZoneOperationsClient")
        return lambda: client.wait(project=self.project, zone=zone, operation=name)

    # -- instances -----------------------------------------------------------------------------------

    async def insert_instance(self, zone: str, instance: Any) -> str:
        """Create `instance` in `zone` and wait until it exists (or its operation failed); its
        numeric id, which tells it from a later VM of the same name."""
        client = self._client("InstancesClient")
        what = f"create {instance.name} in {zone}"
        operation = await self._call(
            what, lambda: client.insert_unary(project=self.project, zone=zone, instance_resource=instance)
        )
        target_id = str(operation.target_id or "")
        await self._wait(operation, what, zone)
        self._log.info(
            "skyward.gcp_instance_created",
            instance=instance.name,
            zone=zone,
            machine_type=instance.machine_type.rsplit("/", 1)[-1],
            spot=instance.scheduling.provisioning_model == "SPOT",
        )
        return target_id

    async def instance(self, zone: str, name: str) -> Any | None:
        """The instance, or None once Compute Engine no longer knows it."""
        client = self._client("InstancesClient")
        try:
            return await self._call(
                f"read {name}", lambda: client.get(project=self.project, zone=zone, instance=name)
            )
        except Gone:
            return None

    async def instances(self, zone: str | None = None, label_filter: str = "") -> list[Any]:
        """The instances of `zone` (every zone when None) that `label_filter` keeps."""
        from google.cloud import compute_v1

        client = self._client("InstancesClient")
        if zone is not None:
            request = compute_v1.ListInstancesRequest(project=self.project, zone=zone, filter=label_filter)
            return await self._call(
                f"list the instances of {zone}", lambda: list(client.list(request=request))
            )

        def every_zone() -> list[Any]:
            request = compute_v1.AggregatedListInstancesRequest(project=self.project, filter=label_filter)
            return [i for _, scoped in client.aggregated_list(request=request) for i in scoped.instances]

        return await self._call("list the project's instances", every_zone)

    async def delete_instance(self, zone: str, name: str) -> None:
        """Delete the instance and wait until it is gone; one already gone is not an error."""
        client = self._client("InstancesClient")
        what = f"delete {name} in {zone}"
        try:
            operation = await self._call(
                what, lambda: client.delete_unary(project=self.project, zone=zone, instance=name)
            )
            await self._wait(operation, what, zone)
        except Gone:
            return

    # -- firewall rules ------------------------------------------------------------------------------

    async def insert_firewall(self, rule: Any) -> None:
        client = self._client("FirewallsClient")
        what = f"create the firewall rule {rule.name}"
        operation = await self._call(
            what, lambda: client.insert_unary(project=self.project, firewall_resource=rule)
        )
        await self._wait(operation, what, None)

    async def delete_firewall(self, name: str) -> None:
        client = self._client("FirewallsClient")
        what = f"delete the firewall rule {name}"
        try:
            operation = await self._call(
                what, lambda: client.delete_unary(project=self.project, firewall=name)
            )
            await self._wait(operation, what, None)
        except Gone:
            return

    async def firewalls(self, name_filter: str = "") -> list[Any]:
        from google.cloud import compute_v1

        client = self._client("FirewallsClient")
        what = "list the project's firewall rules"
        request = compute_v1.ListFirewallsRequest(project=self.project, filter=name_filter)
        return await self._call(what, lambda: list(client.list(request=request)))
