"""What a pool left beside its machines is deleted one by one by `NamedSweeper.delete_resources`:
each reported as ended, or with why not, and one that fails stops none of the others."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.named_sweep import NamedSweeper
from skyward.providers.sweep import Machine


@attrs.define
class Nimbus(NamedSweeper):
    name: str = "Nimbus"

    def credentials(self) -> CredentialStatus:
        return CredentialStatus(found=True, where="here")

    def client(self) -> Any:
        return None

    async def rows(self, api: Any) -> list[dict[str, Any]]:
        return []

    async def row(self, api: Any, machine_id: str) -> dict[str, Any] | None:
        return None

    async def delete(self, api: Any, machine_id: str) -> object:
        return None

    def machine(self, row: dict[str, Any], pool: str, node: int) -> Machine:
        raise AssertionError("no machine is listed here")


def test_each_resource_is_deleted_and_a_failure_is_reported_beside_the_others() -> None:
    deleted: list[str] = []

    async def delete(resource: str) -> None:
        if resource == "key-2":
            raise RuntimeError("still in use")
        deleted.append(resource)

    ended = asyncio.run(Nimbus().delete_resources("pool1", "ssh-key", ["key-1", "key-2", "key-3"], delete))
    assert deleted == ["key-1", "key-3"]
    assert [(e.pool, e.kind, e.id, e.error) for e in ended] == [
        ("pool1", "ssh-key", "key-1", None),
        ("pool1", "ssh-key", "key-2", "still in use"),
        ("pool1", "ssh-key", "key-3", None),
    ]
