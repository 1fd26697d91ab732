"""The pool server as a user runs it: `sky server start` in a clean `$SKYWARD_HOME`, `sky` commands
as subprocesses, and a plain HTTP client (urllib) for what the CLI does not show.

`Server.start()` starts a daemon on a free loopback port; `Server.close()` stops it and, if it does
not stop, kills its process group (the daemon runs in a session of its own), so a failed test
leaves no server behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

#: Variables of this machine that would point `sky` at another server, config or cloud.
CLEARED = (
    "SKYWARD_CONFIG", "SKYWARD_SERVER_URL", "SKYWARD_SERVER_TOKEN", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "RUNPOD_API_KEY", "VAST_API_KEY", "HTTP_PROXY", "HTTPS_PROXY",
    "http_proxy", "https_proxy",
)


class Server:
    """One server's world: its home, its working directory, and the `sky` command run in both."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "skyward-home"
        self.env = {k: v for k, v in os.environ.items() if k not in CLEARED}
        self.env.update(SKYWARD_HOME=str(self.home), NO_PROXY="127.0.0.1,localhost", COLUMNS="200")
        self.state: dict[str, Any] = {}

    def sky(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "skyward.cli", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=self.root, env=self.env)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "skyward.cli", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=self.root, env=self.env)

    def start(self, *extra: str) -> Server:
        done = self.sky("server", "start", "--port", "0", "--json", *extra)
        assert done.returncode == 0, done.stderr
        self.state = json.loads(done.stdout)
        return self

    @property
    def url(self) -> str:
        return str(self.state["url"])

    @property
    def pid(self) -> int:
        return int(self.state["pid"])

    @property
    def token(self) -> str:
        return (self.home / "server" / "token").read_text().strip()

    def request(self, method: str, path: str, body: Any = None, token: str | None = "") -> tuple[int, Any]:
        """`(status, JSON body)` of one request; `token=None` sends no Authorization header."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token or self.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def close(self) -> None:
        if not self.state or not alive(self.pid):
            return
        self.sky("server", "stop", timeout=180)
        if alive(self.pid):
            os.killpg(self.pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return False


def wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pid)
