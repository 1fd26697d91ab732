"""The AWS tests' instance metadata service (IMDSv2), one for every "machine" of the test cloud.

On EC2 each instance reaches its own metadata at the same link-local address; the hypervisor
knows which instance asks. Here every machine is an sshd on this host (see aws_cloud.py), so the
service tells who asks the way a hypervisor would, from the connection: the caller's socket is
found in /proc/net/tcp, its process among the processes of a machine's logins (each has the
machine's HOME), and that machine's instance id is the answer.

It speaks what Skyward's node watcher uses: `PUT /latest/api/token` (with
`X-aws-ec2-metadata-token-ttl-seconds`) hands out a session token, and the GETs need it (401
without); `/latest/meta-data/spot/instance-action` and
`/latest/meta-data/events/recommendations/rebalance` answer 404 until the test arms them with
`interrupt(instance_id)` / `recommend_rebalance(instance_id)`, then the JSON AWS documents.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from ssh_hosts import processes_of

ACTION = "/latest/meta-data/spot/instance-action"
REBALANCE = "/latest/meta-data/events/recommendations/rebalance"


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _socket_inode(port: int) -> str | None:
    """The inode of this host's TCP socket bound to 127.0.0.1:`port` (the caller's end)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                return fields[9]
    return None


def _owns(pid: int, inode: str) -> bool:
    target = f"socket:[{inode}]"
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == target for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


class FakeIMDS:
    def __init__(self, homes: dict[str, Path]) -> None:
        #: The machines' homes by instance id (the test cloud's `Machines.homes`, live).
        self.homes = homes
        self.tokens: set[str] = set()
        self.actions: dict[str, dict[str, str]] = {}
        self.rebalances: dict[str, dict[str, str]] = {}
        #: (instance id or None, path) of every GET, in order.
        self.asked: list[tuple[str | None, str]] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-imds", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeIMDS:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def interrupt(self, instance_id: str, action: str = "terminate") -> None:
        """EC2 decided to take this spot instance back in two minutes."""
        self.actions[instance_id] = {"action": action, "time": _iso(time.time() + 120)}

    def recommend_rebalance(self, instance_id: str) -> None:
        self.rebalances[instance_id] = {"noticeTime": _iso(time.time())}

    def caller(self, port: int) -> str | None:
        """The instance whose login holds the socket at 127.0.0.1:`port`."""
        inode = _socket_inode(port)
        if inode is None:
            return None
        for instance, home in list(self.homes.items()):
            if any(_owns(pid, inode) for pid in processes_of(home)):
                return instance
        return None

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        imds = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
                pass

            def do_PUT(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/latest/api/token" or not self.headers.get(
                    "X-aws-ec2-metadata-token-ttl-seconds"
                ):
                    self._answer(400, "")
                    return
                token = secrets.token_urlsafe(24)
                imds.tokens.add(token)
                self._answer(200, token)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.headers.get("X-aws-ec2-metadata-token") not in imds.tokens:
                    self._answer(401, "")
                    return
                instance = imds.caller(self.client_address[1])
                imds.asked.append((instance, self.path))
                table = {ACTION: imds.actions, REBALANCE: imds.rebalances}.get(self.path)
                item = table.get(instance) if table is not None and instance is not None else None
                if item is None:
                    self._answer(404, "Not Found")
                else:
                    self._answer(200, json.dumps(item))

            def _answer(self, status: int, body: str) -> None:
                payload = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
