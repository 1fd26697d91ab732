"""Skyward's VMs on Verda found and deleted without a pool: Verda's answer to `sky ls` / `sky down`.

Verda has no tags: a VM is Skyward's when its hostname is `skyward-<pool>-<node>`
(`machine.hostname`). Nothing else is listed or deleted, and `end` reads each VM back by id
before deleting it. A pool also leaves its nodes' startup scripts (named like the VMs; they hold
the host key and the account's credentials) and its login key (`skyward-<pool>`): once a pool has
no VM left, `end` deletes those too. The credentials are `$VERDA_CLIENT_ID` /
`$VERDA_CLIENT_SECRET`; `$VERDA_API_URL` points the command at another endpoint. Verda has no
lease: its VMs never count as expired.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, TypeVar

import attrs

from skyward.providers.calls import run_closing
from skyward.providers.credentials import CredentialStatus, verified
from skyward.providers.sweep import Ended, Machine, SweepReport, end_each, named_pool, parse_time
from skyward_verda.account import API_URL, locate_credentials
from skyward_verda.machine import NAME_PREFIX

URL_VARIABLE = "VERDA_API_URL"
T = TypeVar("T")


def pool_of(row: dict[str, Any] | None) -> tuple[str, int] | None:
    """(pool, node) of a VM Skyward deployed, read from its hostname; None for any other."""
    return named_pool(NAME_PREFIX, (row or {}).get("hostname"))


@attrs.define
class VerdaSweeper:
    name: str = "Verda"

    def credentials(self) -> CredentialStatus:
        return locate_credentials()

    def _run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        from skyward_verda.account import resolve_credentials
        from skyward_verda.api import VerdaAPI

        url = os.environ.get(URL_VARIABLE) or API_URL
        return run_closing(lambda: VerdaAPI(resolve_credentials(None, None), url), work)

    def machines(self, region: str | None = None) -> list[Machine]:
        async def work(api: Any) -> list[dict[str, Any]]:
            return list(await api.instances())

        from skyward_verda.api import gone

        rows = [r for r in self._run(work) if pool_of(r) is not None and not gone(r)]
        return [self._machine(r) for r in rows if region is None or str(r.get("location")) == region.upper()]

    def _machine(self, row: dict[str, Any]) -> Machine:
        pool, node = pool_of(row) or ("", None)
        price = row.get("price_per_hour")
        try:
            hourly = float(price) if price is not None else None
        except (TypeError, ValueError):
            hourly = None
        return Machine(
            provider=self.name, pool=pool, node=node, id=str(row.get("id")),
            instance_type=str(row.get("instance_type") or "?") + (" (spot)" if row.get("is_spot") else ""),
            region=str(row.get("location") or "?"), state=str(row.get("status") or "?"),
            launched_at=parse_time(row.get("created_at")), hourly_price=hourly,
        )

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        async def work(api: Any) -> list[Ended]:
            from skyward_verda.api import gone

            async def still_ours(machine: Machine) -> bool:
                row = await api.instance(machine.id)
                found = pool_of(row) if not gone(row) else None
                return found is not None and found[0] == machine.pool

            items = await end_each(
                self.name, machines, still_ours, lambda m: api.delete_instances([m.id]), "hostname"
            )
            return items + await self._leftover_resources(api, pools)

        if not machines and not pools:
            return SweepReport()
        return SweepReport(tuple(self._run(work)))

    async def _leftover_resources(self, api: Any, pools: Collection[str]) -> list[Ended]:
        """The startup scripts and login keys of `pools` that have no VM left."""
        from skyward_verda.api import gone

        busy = {found[0] for row in await api.instances() if not gone(row) and (found := pool_of(row))}
        items: list[Ended] = []
        for pool in set(pools) - busy:
            scripts = [
                s for s in await api.scripts() if (pool_of({"hostname": s.get("name")}) or ("",))[0] == pool
            ]
            keys = [k for k in await api.ssh_keys() if k.get("name") == f"{NAME_PREFIX}{pool}"]
            for kind, rows, delete in (
                ("startup-script", scripts, api.delete_script), ("ssh-key", keys, api.delete_ssh_key)
            ):
                for row in rows:
                    try:
                        await delete(str(row["id"]))
                    except Exception as exc:  # noqa: BLE001 - reported beside the others
                        items.append(Ended(self.name, pool, kind, str(row["id"]), str(exc)))
                    else:
                        items.append(Ended(self.name, pool, kind, str(row["id"])))
        return items


def verify(status: CredentialStatus) -> CredentialStatus:
    """`sky providers --check`: one cheap authenticated call, the account's VMs listed (nothing is
    created)."""

    async def listed(api: Any) -> int:
        return len(await api.instances())

    listing = "the credentials list the account's VMs"
    return verified(status, lambda: VerdaSweeper()._run(listed), listing, thread="verda-check")
