"""Skyward's instances on Novita found and deleted without a pool: Novita's answer to `sky ls` /
`sky down`.

Novita has no tags: an instance is Skyward's when its name is `skyward-<pool>-<node>`
(`machine.instance_name`); nothing else is listed or deleted, and `end` reads each instance back
by id before deleting it. A pool creates nothing on Novita besides its instances. The key is
`$NOVITA_API_KEY`; `$NOVITA_API_URL` points the command at another endpoint. Novita has no
lease: its instances never count as expired.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar

import attrs

from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus, verified
from skyward.providers.sweep import Ended, Machine, SweepReport, end_each, named_pool, parse_time
from skyward_novita.account import API_URL, locate_api_key
from skyward_novita.machine import NAME_PREFIX

URL_VARIABLE = "NOVITA_API_URL"
T = TypeVar("T")


def pool_of(row: dict[str, Any] | None) -> tuple[str, int] | None:
    return named_pool(NAME_PREFIX, (row or {}).get("name"))


@attrs.define
class NovitaSweeper:
    name: str = "Novita"

    def credentials(self) -> CredentialStatus:
        return locate_api_key()

    def _run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        from skyward_novita.account import resolve_api_key
        from skyward_novita.api import NovitaAPI

        url = os.environ.get(URL_VARIABLE) or API_URL
        return run_closing(lambda: NovitaAPI(resolve_api_key(None), url), work)

    def machines(self, region: str | None = None) -> list[Machine]:
        from skyward_novita.api import gone

        async def work(api: Any) -> list[dict[str, Any]]:
            return list(await api.instances())

        return [self._machine(r) for r in self._run(work) if pool_of(r) is not None and not gone(r)]

    def _machine(self, row: dict[str, Any]) -> Machine:
        pool, node = pool_of(row) or ("", None)
        return Machine(
            provider=self.name, pool=pool, node=node, id=str(row.get("id")),
            instance_type=f"{row.get('gpuNum') or '?'}x {row.get('productName') or '?'}"
            + (" (spot)" if row.get("billingMode") == "spot" else ""),
            region=str(row.get("clusterName") or row.get("clusterId") or "?"),
            state=str(row.get("status") or "?"),
            launched_at=parse_time(row.get("createdAt")),
        )

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        async def work(api: Any) -> list[Ended]:
            from skyward_novita.api import gone

            async def still_ours(machine: Machine) -> bool:
                row = await api.instance(machine.id)
                found = pool_of(row) if not gone(row) else None
                return found is not None and found[0] == machine.pool

            return await end_each(self.name, machines, still_ours, lambda m: api.delete(m.id), "name")

        return SweepReport(tuple(self._run(work))) if machines else SweepReport()


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one cheap authenticated call, the account's instances listed
    (nothing is created)."""

    async def listed(api: Any) -> int:
        return len(await api.instances())

    listing = "the credentials list the account's instances"
    return verified(status, lambda: NovitaSweeper()._run(listed), listing, thread="novita-check")
