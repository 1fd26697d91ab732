"""Handing over a rented cloud's machines once they can be used: each one's row read back from
the API, its address, its pinned host key.

Every VM cloud's `refresh` makes the same reading of the rows it listed for a pool's machines:
a machine whose row says it ended (deleted, failed) fails the start, naming it and why; one
without an address yet (booting) is asked again at the next refresh; one with an address is
handed over once its sshd presents the pool's host key (`probe.PinnedKeyWait`, which also hands
over, past its grace, one that keeps presenting another key, for the pinned check to refuse).
A cloud writes only its words: `ended(row)` and `address(row)`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from skyward.errors import ProvisionError
from skyward.providers.base import Instance
from skyward.providers.probe import PinnedKeyWait

Row = dict[str, Any]


@attrs.frozen
class Address:
    """Where a machine's sshd answers: its host and port, its private address where it has one,
    and the login user where the cloud names it (else the instance's stays)."""

    host: str
    port: int
    private: str = ""
    user: str = ""


async def handed_over(
    instances: Sequence[Instance],
    rows: Sequence[Row | None],
    *,
    keys: PinnedKeyWait,
    expected: Callable[[Instance], str],
    ended: Callable[[Row | None], str | None],
    address: Callable[[Row], Address | None],
    what: str,
) -> list[Instance]:
    """The `instances` ready to use, given each one's `rows` entry (None: the API lists it no
    more). `ended(row)` says why a machine will not come up (None while it may), `address(row)`
    where it answers (None while it has no address yet); `expected(instance)` is the host key it
    must present; `what` names a machine in an error ("Vultr instance")."""
    ready: list[Instance] = []
    for instance, row in zip(instances, rows, strict=True):
        why = ended(row)
        if why is not None:
            raise ProvisionError(
                f"{what} {instance.id} (node {instance.node}) ended before it could be used ({why})"
            )
        where = address(row) if row is not None else None
        if where is None or not await keys.ready(instance.id, where.host, where.port, expected(instance)):
            continue
        user = {"ssh_user": where.user} if where.user else {}
        ready.append(
            attrs.evolve(
                instance,
                public_ip=where.host,
                private_ip=where.private or where.host,
                ssh_port=where.port,
                **user,
            )
        )
    return ready


async def read_back(
    instances: Sequence[Instance], read: Callable[[str], Awaitable[Row | None]]
) -> list[Row | None]:
    """Each instance's row, read together (`read(id)`: None once the API lists it no more)."""
    return list(await asyncio.gather(*(read(i.id) for i in instances)))
