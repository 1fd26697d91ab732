"""`server.json` names the server's process for good: pid and start time. A server killed leaves
its file behind, and the pid in it may be any other process by then: `sky server stop` must not
signal that process, and must say that no server runs. A SIGTERM (a graceful stop) removes the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import Server, wait_gone


@pytest.fixture
def unrelated() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not a server: what a dead server's pid may have become."""
    process = subprocess.Popen(["sleep", "60"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def leave_stale_state(server: Server, pid: int, **recorded: str) -> None:
    """`server.json` and the token as a server killed with SIGKILL leaves them, naming `pid`."""
    folder = server.home / "server"
    folder.mkdir(parents=True, exist_ok=True)
    state = {"url": "http://127.0.0.1:9", "host": "127.0.0.1", "port": 9, "started": time.time() - 3600,
             "pid": pid, "log": str(folder / "server.log"), **recorded}
    (folder / "server.json").write_text(json.dumps(state))
    (folder / "token").write_text("the-dead-servers-token\n")


@pytest.mark.parametrize("recorded", [{}, {"process_start": "1"}], ids=["older-file", "other-start-time"])
def test_stop_leaves_alone_a_process_that_took_a_dead_servers_pid(
    fresh: Server, unrelated: subprocess.Popen[bytes], recorded: dict[str, str]
) -> None:
    leave_stale_state(fresh, unrelated.pid, **recorded)
    stopped = fresh.sky("server", "stop", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"stopped": False, "pid": None}
    time.sleep(0.5)
    assert unrelated.poll() is None, "sky server stop killed a process that was not the server"
    assert fresh.sky("server", "status").returncode == 1


def test_a_stale_state_does_not_keep_a_new_server_from_starting(
    fresh: Server, unrelated: subprocess.Popen[bytes]
) -> None:
    leave_stale_state(fresh, unrelated.pid)
    fresh.start()
    assert fresh.pid != unrelated.pid and unrelated.poll() is None
    assert json.loads(fresh.sky("server", "status", "--json").stdout)["pid"] == fresh.pid


def test_the_state_records_the_servers_start_time(fresh: Server) -> None:
    fresh.start()
    state = json.loads((fresh.home / "server" / "server.json").read_text())
    started = Path(f"/proc/{fresh.pid}/stat").read_text().rpartition(")")[2].split()[19]
    assert state["pid"] == fresh.pid and state["process_start"] == started


def test_a_sigterm_stops_the_server_and_removes_its_state(fresh: Server) -> None:
    fresh.start()
    os.kill(fresh.pid, signal.SIGTERM)
    assert wait_gone(fresh.pid)
    assert not (fresh.home / "server" / "server.json").exists()
    assert fresh.sky("server", "status").returncode == 1
