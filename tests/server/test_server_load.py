"""The server under load: long calls do not starve it, the calls past its cap are told so (429),
and a large `map` costs the database a handful of commits, not one per task."""

from __future__ import annotations

import http.client
import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from server_support import Server

import skyward as sky

CAP = 40
#: A task that waits for a file: a call that stays in flight until the test releases it. Defined
#: in a module no process can import, so that it travels by value, as a script's function does.
GATE = """
def gate(path):
    import os, time
    deadline = time.time() + 120
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.05)
    return os.path.exists(path)
"""


def gated_call(flag: Path) -> bytes:
    namespace: dict[str, Any] = {"__name__": "skyward_test_gate_not_importable"}
    exec(GATE, namespace)
    return cloudpickle.dumps(("run", sky.function(namespace["gate"])(str(flag)), None))


def post(server: Server, path: str, body: bytes, timeout: float) -> tuple[int, bytes]:
    parsed = urllib.parse.urlsplit(server.url)
    connection = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=timeout)
    try:
        connection.request("POST", path, body=body, headers={"Authorization": f"Bearer {server.token}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def timed(server: Server, path: str) -> float:
    started = time.perf_counter()
    status, _ = server.request("GET", path)
    assert status == 200, path
    return time.perf_counter() - started


@pytest.fixture
def capped(fresh: Server) -> Iterator[Server]:
    """A server whose calls' cap is `CAP`, holding a Local pool called `busy`."""
    fresh.env["SKYWARD_SERVER_MAX_CALLS"] = str(CAP)
    fresh.start()
    assert fresh.sky("compute", "create", "busy", "--provider", "local").returncode == 0
    yield fresh


def test_long_calls_leave_the_server_answering_and_the_call_past_the_cap_gets_429(
    capped: Server, tmp_path: Path
) -> None:
    flag = tmp_path / "release"
    call = gated_call(flag)
    answers: list[tuple[int, bytes]] = []
    threads = [threading.Thread(target=lambda: answers.append(post(capped, "/v1/pools/busy/call", call, 120)))
               for _ in range(CAP)]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while capped.request("GET", "/v1/pools/busy")[1]["running"] < CAP and time.monotonic() < deadline:
            time.sleep(0.1)
        assert capped.request("GET", "/v1/pools/busy")[1]["running"] == CAP

        for path in ("/v1/server", "/v1/pools/busy?wait=5", "/v1/pools/busy/view", "/v1/pools/busy/history"):
            assert timed(capped, path) < 0.5, f"GET {path} waited behind the calls"
        status, body = post(capped, "/v1/pools/busy/call", call, 10)
        assert status == 429
        message = json.loads(body)["error"]
        assert f"{CAP} calls" in message and "SKYWARD_SERVER_MAX_CALLS" in message
    finally:
        flag.write_text("go")
        for thread in threads:
            thread.join(120)
    assert len(answers) == CAP
    assert {(status, cloudpickle.loads(body)) for status, body in answers} == {(200, ("ok", True))}


MAP = """
import skyward as sky
with sky.Compute(name="mapped") as pool:
    print(sum(pool.map(lambda v: v + 1, range(2000))))
"""


def commits(server: Server) -> int | None:
    return server.request("GET", "/v1/server")[1].get("store", {}).get("commits")


def test_a_map_of_2000_items_costs_the_database_a_handful_of_commits(server: Server) -> None:
    assert server.sky("compute", "create", "mapped", "--provider", "local").returncode == 0
    try:
        before = commits(server)
        attached = {**server.env, "SKYWARD_SERVER_URL": server.url}
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(MAP)], capture_output=True, text=True,
                              timeout=300, cwd=server.root, env=attached)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [str(sum(range(1, 2001)))]
        history = server.request("GET", "/v1/pools/mapped/history")[1]  # reading commits what is buffered
        after = commits(server)
    finally:
        server.sky("compute", "delete", "mapped")
    db = sqlite3.connect(server.home / "server" / "pools.db")
    rows = db.execute("SELECT COUNT(*) FROM events WHERE pool = 'mapped' AND type LIKE 'Task%'").fetchone()[0]
    db.close()
    assert rows <= 10
    assert before is not None and after is not None and after - before <= 5
    counted: dict[str, int] = {}
    for event in history["events"]:
        if event["type"].startswith("Task"):
            counted[event["type"]] = counted.get(event["type"], 0) + event["data"]["count"]
    assert counted == {"TaskStarted": 2000, "TaskCompleted": 2000}
