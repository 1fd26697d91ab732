"""Notices a cloud gives a machine only from inside (a spot VM about to be taken back), read on
the node and passed to the pool over the node's SSH connection.

A cloud that warns a spot machine through its metadata service (GCP's `instance/preempted`,
EC2's `spot/instance-action`) is watched by a small script (standard library only) run on one
more session channel of the connection the pool already holds: no port is opened on the node,
and nothing a task does on the worker can hold it up. The script prints one JSON line per notice
(`{"kind": ..., "detail": {...}}`) and ends when the channel closes (the pool is gone, or the node
is let go). A provider gives the script, its arguments, and `reason(notice)`: the preemption a
notice means, or None (a notice only logged).

`NodeNotices` keeps what the nodes reported; a provider's `preemptions` reads `preempted`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import Callable, Sequence
from typing import Any

import structlog

#: A notice as the script prints it: its kind and detail.
Notice = dict[str, Any]


class NodeNotices:
    """What the nodes' watchers reported, by instance id (see the module)."""

    def __init__(
        self, cloud: str, script: str, args: Sequence[str], reason: Callable[[Notice], str | None]
    ) -> None:
        self.cloud = cloud
        self.script = script
        self.args = tuple(args)
        self.reason = reason
        #: Instance id -> why it is being taken back.
        self.taken: dict[str, str] = {}
        self._watchers: dict[str, tuple[Any, asyncio.Task[None]]] = {}
        self._log = structlog.get_logger()

    def watching(self, instance_id: str, conn: Any) -> bool:
        found = self._watchers.get(instance_id)
        return found is not None and found[0] is conn and not found[1].done()

    async def watch(self, conn: Any, instance_id: str, node: int, python: str, workdir: str) -> None:
        """Start the watcher on `conn` (the node's connection) unless one runs there already."""
        if self.watching(instance_id, conn):
            return
        self.stop(instance_id)
        q = shlex.quote
        run = " ".join([f"exec {q(python)} -c {q(self.script)}", *(q(a) for a in self.args)])
        process = await conn.create_process(f"cd {q(workdir)} && {run}", encoding="utf-8")
        task = asyncio.get_running_loop().create_task(self._read(process, instance_id, node))
        self._watchers[instance_id] = (conn, task)

    async def _read(self, process: Any, instance_id: str, node: int) -> None:
        try:
            async for line in process.stdout:
                self.notice(instance_id, node, line)
        except Exception as exc:  # noqa: BLE001 - the connection ended: so does the watch
            self._log.debug(
                "skyward.notice_watch_ended", cloud=self.cloud, instance=instance_id, error=str(exc)
            )
        finally:
            with contextlib.suppress(Exception):
                process.close()

    def notice(self, instance_id: str, node: int, line: str) -> None:
        """One line a watcher printed: a preemption kept (the first one), anything else logged."""
        try:
            notice = json.loads(line)
        except ValueError:
            return
        if not isinstance(notice, dict):
            return
        reason = self.reason(notice)
        if reason is not None:
            self.taken.setdefault(instance_id, reason)
            self._log.warning(
                "skyward.preemption_notice", cloud=self.cloud, instance=instance_id, node=node, reason=reason
            )
        else:
            self._log.info(
                "skyward.node_notice",
                cloud=self.cloud,
                instance=instance_id,
                node=node,
                kind=notice.get("kind"),
                detail=notice.get("detail"),
            )

    def preempted(self, instance_ids: list[str]) -> dict[str, str]:
        return {i: self.taken[i] for i in instance_ids if i in self.taken}

    def stop(self, instance_id: str) -> None:
        found = self._watchers.pop(instance_id, None)
        if found is not None:
            found[1].cancel()

    def close(self) -> None:
        for instance_id in list(self._watchers):
            self.stop(instance_id)
