"""Spot interruption notices and rebalance recommendations, read on each node from its instance
metadata service (IMDSv2) and passed to the pool over the node's SSH connection.

EC2 tells a spot instance it is about to be taken back only from inside: the item
`/latest/meta-data/spot/instance-action` appears in its metadata (about two minutes ahead;
AWS recommends checking every 5 seconds), and `/latest/meta-data/events/recommendations/rebalance`
when it is at elevated risk of that. Both answer 404 until then, and both need an IMDSv2 session
token (`PUT /latest/api/token`). So each spot node runs `WATCH_SCRIPT` (standard library only)
on one more session channel of the connection the pool already holds: no port is opened, and
nothing a task does on the worker can hold it up. It prints one JSON line per notice, once, and
ends when the channel closes (the pool is gone, or the node is let go).

`SpotNotices` keeps what the nodes reported; `AWSProvider.preemptions` reads it. An interruption
notice is a preemption. A rebalance recommendation is one only with `AWS(replace_on_rebalance=
True)`; otherwise it is logged. `AWS(metadata_url=...)` points the nodes at another metadata
service (the tests' fake one); AWS's own is `http://169.254.169.254`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from typing import Any

import structlog

#: How often a node asks at most (AWS's advice); a pool with a shorter reconcile tick asks as often.
POLL_INTERVAL = 5.0

#: Run on the node as `python -c WATCH_SCRIPT <metadata url> <interval>`.
WATCH_SCRIPT = r"""
import json, os, sys, threading, time, urllib.error, urllib.request

base, interval = sys.argv[1].rstrip("/"), float(sys.argv[2])
ITEMS = (("interruption", "/latest/meta-data/spot/instance-action"),
         ("rebalance", "/latest/meta-data/events/recommendations/rebalance"))


def gone():
    sys.stdin.buffer.read()  # EOF: the pool closed the channel, or its connection dropped
    os._exit(0)


def ask(method, path, headers):
    request = urllib.request.Request(base + path, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=2) as answer:
        return answer.read().decode()


def say(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


threading.Thread(target=gone, daemon=True).start()
token, renew_at, seen, failing = None, 0.0, set(), False
while True:
    try:
        if token is None or time.monotonic() > renew_at:
            token = ask("PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "21600"})
            renew_at = time.monotonic() + 21000
        for kind, path in ITEMS:
            if kind in seen:
                continue
            try:
                body = ask("GET", path, {"X-aws-ec2-metadata-token": token})
            except urllib.error.HTTPError as error:
                if error.code == 401:
                    token = None
                continue
            seen.add(kind)
            try:
                detail = json.loads(body)
            except ValueError:
                detail = {"raw": body[:200]}
            say({"kind": kind, "detail": detail})
        failing = False
    except Exception as error:
        if not failing:
            say({"kind": "unreachable", "detail": {"error": str(error)[:200]}})
        failing, token = True, None
    time.sleep(interval)
"""


class SpotNotices:
    """What the nodes' watchers reported, by instance id (see the module)."""

    def __init__(self, metadata_url: str, interval: float, replace_on_rebalance: bool) -> None:
        self.metadata_url = metadata_url
        self.interval = interval
        self.replace_on_rebalance = replace_on_rebalance
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
        run = f"exec {q(python)} -c {q(WATCH_SCRIPT)} {q(self.metadata_url)} {self.interval:g}"
        command = f"cd {q(workdir)} && {run}"
        process = await conn.create_process(command, encoding="utf-8")
        task = asyncio.get_running_loop().create_task(self._read(process, instance_id, node))
        self._watchers[instance_id] = (conn, task)

    async def _read(self, process: Any, instance_id: str, node: int) -> None:
        try:
            async for line in process.stdout:
                self._notice(instance_id, node, line)
        except Exception as exc:  # noqa: BLE001 - the connection ended: so does the watch
            self._log.debug("skyward.aws_spot_watch_ended", instance=instance_id, error=str(exc))
        finally:
            with contextlib.suppress(Exception):
                process.close()

    def _notice(self, instance_id: str, node: int, line: str) -> None:
        try:
            notice = json.loads(line)
        except ValueError:
            return
        kind, detail = notice.get("kind"), notice.get("detail") or {}
        if kind == "interruption":
            action, when = detail.get("action", "terminate"), detail.get("time", "soon")
            self.taken.setdefault(instance_id, f"spot interruption notice: {action} at {when}")
            self._log.warning("skyward.aws_spot_interruption", instance=instance_id, node=node, action=action,
                              time=when)
        elif kind == "rebalance":
            when = detail.get("noticeTime", "now")
            self._log.warning("skyward.aws_rebalance_recommendation", instance=instance_id, node=node,
                              time=when, replaced=self.replace_on_rebalance)
            if self.replace_on_rebalance:
                self.taken.setdefault(instance_id, f"rebalance recommendation at {when}")
        elif kind == "unreachable":
            self._log.info("skyward.aws_metadata_unreachable", instance=instance_id, node=node, **detail)

    def preempted(self, instance_ids: list[str]) -> dict[str, str]:
        return {i: self.taken[i] for i in instance_ids if i in self.taken}

    def stop(self, instance_id: str) -> None:
        found = self._watchers.pop(instance_id, None)
        if found is not None:
            found[1].cancel()

    def close(self) -> None:
        for instance_id in list(self._watchers):
            self.stop(instance_id)
