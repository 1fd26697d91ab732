"""The server's limits on what clients may hold of it: idle connections, unread output, uploads to
pools it does not hold; and the idle reaper, which neither dies of one failure nor ends a pool
whose files are on their way."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from server_support import Server

from skyward.server.app import _reap
from skyward.server.held import Held
from skyward.server.pools import Pools
from skyward.server.store import Store


def test_a_connection_that_never_sends_a_request_is_closed(server: Server) -> None:
    parsed = urllib.parse.urlsplit(server.url)
    idle = [socket.create_connection((parsed.hostname or "", parsed.port or 0)) for _ in range(20)]
    try:
        time.sleep(7)  # the server's idle timeout is 5 s
        closed = 0
        for connection in idle:
            connection.settimeout(1)
            with contextlib.suppress(TimeoutError, OSError):
                closed += connection.recv(1) == b""
        assert closed == 20
    finally:
        for connection in idle:
            connection.close()


def test_an_upload_to_a_pool_the_server_does_not_hold_is_refused_before_its_body(server: Server) -> None:
    parsed = urllib.parse.urlsplit(server.url)
    connection = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=10)
    try:
        connection.putrequest("PUT", "/v1/pools/nosuch/files?destination=.")
        connection.putheader("Authorization", f"Bearer {server.token}")
        connection.putheader("Content-Length", str(100 << 20))
        connection.endheaders()  # the headers only: the server answers without waiting for 100 MB
        response = connection.getresponse()
        assert response.status == 404
        assert "sky compute create nosuch" in json.loads(response.read())["error"]
    finally:
        connection.close()


class StubPools:
    """What `_reap` sees of the pools: a `reap_idle` that fails once, then counts its calls."""

    idle_timeout = 0.05

    def __init__(self) -> None:
        self.calls = 0

    def reap_idle(self) -> list[str]:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("a provider's API hiccuped")
        return []


def test_the_reaper_keeps_reaping_after_an_exception() -> None:
    import structlog.testing

    pools = StubPools()

    async def reap_a_while() -> None:
        reaper = asyncio.create_task(_reap(pools))  # type: ignore[arg-type]
        await asyncio.sleep(1.0)
        assert not reaper.done(), "the reaper died"
        reaper.cancel()

    with structlog.testing.capture_logs() as logged:
        asyncio.run(reap_a_while())
    assert pools.calls >= 3
    assert [e["error"] for e in logged if e["event"] == "skyward.server_reap_failed"] == [
        "RuntimeError: a provider's API hiccuped"
    ]


class SlowPool:
    """A ready pool's stand-in whose tasks wait for `release` (a long transfer)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.stopped = False

    def current_nodes(self) -> int:
        return 1

    def run(self, call: Any, target: Any = None) -> Any:
        self.release.wait(30)
        if call.name == "pack_chunks":
            return iter([b"chunk-1", b"chunk-2"])
        return ["written"]

    def stop(self, reason: str = "") -> None:
        self.stopped = True


@pytest.fixture
def idle_pools(tmp_path: Path) -> Any:
    pools = Pools(Store(tmp_path / "pools.db"), idle_timeout=1)
    pool = SlowPool()
    held = Held("files", {"provider": "local"}, state="ready", pool=pool)  # type: ignore[arg-type]
    held.started.set()
    pools._held["files"] = held
    yield pools, held, pool
    pool.release.set()
    pools.store.close()


def test_an_upload_under_way_keeps_its_pool_from_the_reaper(idle_pools: Any, tmp_path: Path) -> None:
    pools, held, pool = idle_pools
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(b"")
    upload = threading.Thread(target=pools.upload, args=("files", "head", str(archive), "."))
    upload.start()
    time.sleep(0.2)
    assert pools.reap_idle(now=time.time() + 3600) == []  # an hour idle, by the clock: but in use
    pool.release.set()
    upload.join(10)
    assert held.running == 0 and held.last_used > time.time() - 5
    assert pools.reap_idle(now=time.time() + 3600) == ["files"]


def test_a_download_being_read_keeps_its_pool_from_the_reaper(idle_pools: Any) -> None:
    pools, held, pool = idle_pools
    pool.release.set()
    chunks = pools.download("files", "head", "data")
    assert next(chunks) == b"chunk-1"
    assert pools.reap_idle(now=time.time() + 3600) == []
    assert list(chunks) == [b"chunk-2"]
    assert held.running == 0
    assert pools.reap_idle(now=time.time() + 3600) == ["files"]


def test_a_download_never_read_gives_its_pool_back_when_closed(idle_pools: Any) -> None:
    pools, held, pool = idle_pools
    pool.release.set()
    chunks = pools.download("files", "head", "data")
    chunks.close()
    assert held.running == 0


def test_output_nobody_reads_stays_bounded_and_the_gap_is_told() -> None:
    from skyward.server.output import OutputBuffer

    buffer = OutputBuffer(limit=1 << 20)
    chunk = "x" * 1023 + "\n"

    def script() -> None:  # 100 MB of output, as fast as it comes
        for _ in range(100 * 1024):
            buffer.put("0", "stdout", chunk)
        buffer.put("0", "exit", 0)
        buffer.put("0", "done", None)

    started = time.monotonic()
    writer = threading.Thread(target=script)
    writer.start()
    writer.join(30)
    assert not writer.is_alive() and time.monotonic() - started < 30  # the node never waited
    assert buffer.size <= 1 << 20

    async def drain() -> list[tuple[str, str, Any]]:
        items = []
        while not items or items[-1][1] != "done":
            items.append(await buffer.get())
        return items

    items = asyncio.run(drain())
    kept = [value for _, stream, value in items if stream == "stdout"]
    told = [value for _, stream, value in items if stream == "stderr"]
    assert len(kept) == 1024 and len(told) == 1
    assert told[0].startswith(f"[skyward: {100 * 1024 - 1024} line(s) of output dropped here")
    assert [(stream, value) for _, stream, value in items[-2:]] == [("exit", 0), ("done", None)]


LOUD = """
import sys
line = "y" * 1023 + "\\n"
for _ in range(60 * 1024):
    sys.stdout.write(line)
print("the end")
"""


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_client_that_does_not_read_costs_the_server_no_more_than_the_buffer(server: Server) -> None:
    assert server.sky("compute", "create", "loud", "--provider", "local").returncode == 0
    parsed = urllib.parse.urlsplit(server.url)
    connection = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=120)
    try:
        before = rss_kb(server.pid)
        body = json.dumps({"script": "loud.py", "source": LOUD, "argv": []})
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
        connection.request("POST", "/v1/pools/loud/run", body=body, headers=headers)
        response = connection.getresponse()
        peak = before
        deadline = time.monotonic() + 60
        while server.request("GET", "/v1/pools/loud")[1]["running"] and time.monotonic() < deadline:
            peak = max(peak, rss_kb(server.pid))  # 60 MB printed, nothing read
            time.sleep(0.2)
        peak = max(peak, rss_kb(server.pid))
        lines = [json.loads(line) for line in response.read().splitlines()]
    finally:
        connection.close()
        server.sky("compute", "delete", "loud")
    assert peak - before < 30 * 1024, f"the server grew by {(peak - before) // 1024} MB"
    text = "".join(line.get("data", "") for line in lines)
    assert lines[-1]["exit"] == 0
    assert "line(s) of output dropped here" in text  # and what was kept came through
