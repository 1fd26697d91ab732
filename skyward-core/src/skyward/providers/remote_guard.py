"""The node guardian's side of `RemoteNodes` (`skyward.guardian`): its start, and its lease's renewal.

The guardian starts first in the bootstrap's script (`guardian.script_start`: no request of its
own), whose answer opens the renewal of its lease on the node's connection at once; a node whose
script did not have it answer as running gets the required start after the bootstrap (`_guard`),
with the venv's Python if the machine had none. A node whose guardian cannot start is not used.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyward.providers.base import Cluster, NodeSetup
    from skyward.transport.ssh_connect import Connection
    from skyward.transport.ssh_lease import LeaseRenewal


class NodeGuards:
    """Mixed into `RemoteNodes`: the guardian of each node folder, and its lease's renewal."""

    python: str | None
    _conns: dict[int, Any]
    #: Per node: its guardian's folder and the interpreters that may run it, and the renewal.
    _guards: dict[int, tuple[str, tuple[str, ...], float]]
    _renewals: dict[int, LeaseRenewal]
    #: Per node: the connection the guardian answered on in the bootstrap's output, and the
    #: opening of its renewal there.
    _renewing: dict[int, tuple[Any, asyncio.Future[None]]]
    _log: Any

    if TYPE_CHECKING:  # RemoteNodes'

        def python_bin(self) -> str: ...

    async def _guard_after(
        self, node: int, conn: Connection, cluster: Cluster, setup: NodeSetup, workdir: str
    ) -> None:
        """The required start of the guardian, unless the bootstrap's run on `conn` had it answer
        as running: then its renewal is being opened already (`_guardian_first`), and nothing waits
        for that (a renewal that fails to open is logged; the guardian counts down, and the next
        start or reconnect renews)."""
        renewing = self._renewing.get(node)
        if renewing is not None and renewing[0] is conn:
            return
        await self._guard(node, conn, cluster, setup, workdir, required=True)

    def _guardian_first(self, node: int, cluster: Cluster, setup: NodeSetup, workdir: str) -> Any:
        """The bootstrap's first lines, which start the node's guardian, and what takes its answer:
        a guardian that runs gets its lease renewed on the node's connection at once."""
        from skyward.guardian import initial_lease, script_start

        ttl = float(cluster.spec.ttl)
        pythons = tuple(p for p in (self.python, "python3", self.python_bin()) if p)
        first = script_start(
            workdir, ttl=ttl, initial=initial_lease(setup.bootstrap_timeout, ttl),
            end_command=setup.end_command, pythons=pythons,
        )

        def answered(answer: str) -> None:
            if not answer.startswith(("started", "running")):
                self._log.info("skyward.guardian_not_started", folder=workdir, answer=answer)
                return
            self._log.info("skyward.guardian", folder=workdir, state=answer, ttl=ttl,
                           ends_machine=bool(setup.end_command))
            self._guards[node] = (workdir, pythons, ttl)
            conn = self._conns[node]
            renewal = self._renewals.get(node)
            if renewal is None or renewal.conn is not conn or not renewal.open_now:
                self._renewing[node] = (conn, asyncio.ensure_future(self._renew(node, conn)))

        return first, answered

    async def _guard(
        self, node: int, conn: Connection, cluster: Cluster, setup: NodeSetup, workdir: str,
        sent: asyncio.Future[None] | None = None, *, required: bool = False,
    ) -> None:
        """Start the node's guardian unless it runs, and renew its lease on `conn`.

        `required`: the start that comes before the worker's. A node whose guardian cannot start
        is not used (`GuardianError`): nothing would end its worker, or its machine, if this
        client died, and on a cloud the machine's boot guardian, never renewed, would end the
        machine under a live pool when its first lease lapsed. The start during the bootstrap
        is not required: the machine may have no Python yet, and the start after it retries.
        """
        renewal = self._renewals.get(node)
        if renewal is not None and renewal.conn is conn and renewal.open_now:
            return
        from skyward.guardian import initial_lease
        from skyward.transport.ssh_lease import guard

        ttl = float(cluster.spec.ttl)
        pythons = tuple(p for p in (self.python, "python3", self.python_bin()) if p)
        try:
            renewal = await guard(
                conn, workdir, ttl=ttl, initial=initial_lease(setup.bootstrap_timeout, ttl),
                end_command=setup.end_command, pythons=pythons, sent=sent,
            )
        except Exception as exc:  # noqa: BLE001 - reported; the required start fails the node
            self._log.warning("skyward.guardian_failed", node=node, error=str(exc))
            if required:
                raise _unguarded(node, f"{type(exc).__name__}: {exc}") from exc
            return
        if renewal is not None:
            self._guards[node] = (workdir, pythons, ttl)
            self._set_renewal(node, renewal)
        elif required:
            raise _unguarded(node, "no Python on the machine could run it, even after the bootstrap")

    async def _renew(self, node: int, conn: Connection) -> None:
        from skyward.guardian import renew_command, renew_interval
        from skyward.transport.ssh_lease import LeaseRenewal

        workdir, pythons, ttl = self._guards[node]
        try:
            renewal = await LeaseRenewal(conn, renew_command(workdir, pythons), renew_interval(ttl)).open()
        except Exception as exc:  # noqa: BLE001 - the guardian counts down; the next start renews
            self._log.warning("skyward.guardian_renew_failed", node=node, error=str(exc))
            return
        self._set_renewal(node, renewal)

    def _set_renewal(self, node: int, renewal: LeaseRenewal | None) -> None:
        if renewal is None and (renewing := self._renewing.pop(node, None)) is not None:
            renewing[1].cancel()
        old = self._renewals.pop(node, None)
        if old is not None and old is not renewal:
            old.close()
        if renewal is not None:
            self._renewals[node] = renewal


def _unguarded(node: int, why: str) -> Exception:
    from skyward.errors import GuardianError

    return GuardianError(
        f"node {node}: its guardian could not start ({why}); the node is not used, since nothing "
        "would end it if this client died. Check that the machine has python3 and a writable home "
        "folder, then start the pool again."
    )
