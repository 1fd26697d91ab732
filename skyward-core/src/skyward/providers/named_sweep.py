"""`NamedSweeper`: `sky ls`/`sky down` for a cloud without tags, whose machines carry their pool in
their name (`skyward-<pool>-<node>`: RunPod's pods, Verda's VMs, Novita's instances).

A cloud writes how to reach its API and read its rows: `client()` (a client with `async close()`,
made on the sweep's own loop), `rows(api)` (every machine of the account), `row(api, id)` (one,
None once gone), `delete(api, id)`, and `machine(row, pool, node)` (the row as a `Machine`).
Optionally `gone(row)` (statuses that bill no more), `pool_of(row)` (the name check, with more
evidence where the cloud has it), `in_region(row, region)`, and `leftover_resources(api, pools)`
(what a pool made beside its machines, deleted once the pool has none left: `delete_resources`
reports each).

`verify(status)` proves a credential for `sky providers --check` by counting `rows` (`count`).
`KeyedSweeper` is the one of a single-key cloud: its credentials and client come from its
`ApiKeyAccount` and API class, so it writes only the rows.

Only rows named for a pool are listed, and `end` reads each machine back by id just before
deleting it (`sweep.end_each`): a machine renamed or reused since it was listed is left alone.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from skyward.extension.cloud_hooks import load
from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus, verified
from skyward.providers.sweep import Ended, Machine, SweepReport, end_each, named_pool

if TYPE_CHECKING:
    from skyward.providers.api_key import ApiKeyAccount

T = TypeVar("T")
Row = dict[str, Any]


class NamedSweeper(abc.ABC):
    """A `Sweeper` over a cloud's machines by name (see the module); subclasses are attrs values
    with a `name` field ("Verda")."""

    name: str
    #: The start of every machine name Skyward gives, and the row field that holds the name.
    prefix = "skyward-"
    name_field = "name"
    #: What a passed credential check says it listed (`verify`).
    listing = "the key lists the account's machines"

    @abc.abstractmethod
    def credentials(self) -> CredentialStatus: ...

    @abc.abstractmethod
    def client(self) -> Any:
        """A new API client from the environment's credentials (closed after each sweep)."""

    @abc.abstractmethod
    async def rows(self, api: Any) -> list[Row]: ...

    @abc.abstractmethod
    async def row(self, api: Any, machine_id: str) -> Row | None: ...

    @abc.abstractmethod
    async def delete(self, api: Any, machine_id: str) -> object: ...

    @abc.abstractmethod
    def machine(self, row: Row, pool: str, node: int) -> Machine: ...

    def gone(self, row: Row | None) -> bool:
        return row is None

    def pool_of(self, row: Row | None) -> tuple[str, int] | None:
        return named_pool(self.prefix, (row or {}).get(self.name_field))

    def in_region(self, row: Row, region: str) -> bool:
        return True

    async def leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        return []

    async def delete_resources(
        self, pool: str, kind: str, ids: Iterable[str], delete: Callable[[str], Awaitable[object]]
    ) -> list[Ended]:
        """Delete a pool's resources of one kind (`kind`: "ssh-key"), each reported as ended or
        with why not; one that fails does not stop the others (for `leftover_resources`)."""
        items: list[Ended] = []
        for resource in ids:
            try:
                await delete(resource)
            except Exception as exc:  # noqa: BLE001 - reported beside the others
                items.append(Ended(self.name, pool, kind, resource, str(exc)))
            else:
                items.append(Ended(self.name, pool, kind, resource))
        return items

    def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """`work(api)` on a loop of its own, the client closed after it."""
        return run_closing(self.client, work)

    async def count(self, api: Any) -> int:
        """What a credential check counts: the rows the sweep lists (one authenticated listing)."""
        return len(await self.rows(api))

    def verify(self, status: CredentialStatus) -> CredentialStatus:
        """`sky providers --check`: `status` with whether the cloud took the credential, told by
        one listing (`count`) that creates nothing, on a thread of its own (`verified`)."""
        thread = f"{self.name.lower()}-check"
        return verified(status, lambda: self.run(self.count), self.listing, thread=thread)

    def machines(self, region: str | None = None) -> list[Machine]:
        listed: list[Machine] = []
        for row in self.run(self.rows):
            found = self.pool_of(row)
            if found is not None and not self.gone(row) and (region is None or self.in_region(row, region)):
                listed.append(self.machine(row, *found))
        return listed

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        if not machines and not pools:
            return SweepReport()

        async def work(api: Any) -> list[Ended]:
            async def still_ours(machine: Machine) -> bool:
                row = await self.row(api, machine.id)
                found = None if self.gone(row) else self.pool_of(row)
                return found is not None and found[0] == machine.pool

            async def delete(machine: Machine) -> object:
                return await self.delete(api, machine.id)

            items = await end_each(self.name, machines, still_ours, delete, self.name_field)
            return items + await self.leftover_resources(api, pools)

        return SweepReport(tuple(self.run(work)))


class KeyedSweeper(NamedSweeper):
    """A `NamedSweeper` of a cloud whose API takes one key: `account` says where the key and the
    endpoint are, `api` names the client class (`"module:Name"`, built with the key and the URL,
    imported only when a sweep runs)."""

    account: ClassVar[ApiKeyAccount]
    api: ClassVar[str]

    def credentials(self) -> CredentialStatus:
        return self.account.locate()

    def client(self) -> Any:
        return load(self.api)(self.account.resolve(None), self.account.env_url())
