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

from skyward.providers.notices import NodeNotices, Notice

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


class SpotNotices(NodeNotices):
    """What the nodes' watchers reported, by instance id (see the module; the watching is the
    kit's, `skyward.providers.notices`)."""

    def __init__(self, metadata_url: str, interval: float, replace_on_rebalance: bool) -> None:
        self.metadata_url = metadata_url
        self.interval = interval
        self.replace_on_rebalance = replace_on_rebalance
        super().__init__("AWS", WATCH_SCRIPT, [metadata_url, f"{interval:g}"], self._reason)

    def _reason(self, notice: Notice) -> str | None:
        """An interruption notice is a preemption; a rebalance recommendation only when asked to."""
        kind, detail = notice.get("kind"), notice.get("detail") or {}
        if kind == "interruption":
            action, when = detail.get("action", "terminate"), detail.get("time", "soon")
            return f"spot interruption notice: {action} at {when}"
        if kind == "rebalance" and self.replace_on_rebalance:
            return f"rebalance recommendation at {detail.get('noticeTime', 'now')}"
        return None

    #: One line a watcher printed (the kit's `notice`).
    _notice = NodeNotices.notice
