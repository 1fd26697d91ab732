"""The pool server, run as a user runs it: `sky server start`, `sky compute ...`, HTTP on loopback."""

from __future__ import annotations

import json
import re
import stat
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import Server, alive, wait_gone
from ssh_hosts import SSHHosts

PID_SCRIPT = """
import os, sys
print("pid", os.getpid(), *sys.argv[1:])
"""


def script(server: Server, name: str, text: str) -> str:
    path = server.root / name
    path.write_text(textwrap.dedent(text))
    return name


@pytest.fixture(scope="module")
def warm(server: Server) -> Iterator[str]:
    """A Local pool called `warm`, created once for the module."""
    done = server.sky("compute", "create", "warm", "--provider", "local", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["state"] == "ready"
    yield "warm"


def test_the_token_file_is_readable_by_its_owner_only(server: Server) -> None:
    mode = stat.S_IMODE((server.home / "server" / "token").stat().st_mode)
    assert mode == 0o600
    assert len(server.token) >= 32


def test_a_request_without_the_token_gets_401(server: Server) -> None:
    assert server.request("GET", "/v1/pools", token=None)[0] == 401
    assert server.request("GET", "/v1/pools", token="not-the-token")[0] == 401
    status, body = server.request("POST", "/v1/pools", {"name": "x", "config": {"provider": "local"}},
                                  token=None)
    assert status == 401 and "token" in body["error"]
    assert server.request("GET", "/v1/pools")[0] == 200


def test_the_server_listens_on_loopback_only_by_default(server: Server) -> None:
    assert server.state["host"] == "127.0.0.1"
    assert server.url.startswith("http://127.0.0.1:")


def test_a_script_run_twice_is_answered_by_the_same_warm_worker(server: Server, warm: str) -> None:
    name = script(server, "pid.py", PID_SCRIPT)
    first = server.sky("compute", "run", warm, name, "one")
    second = server.sky("compute", "run", warm, name, "two", "--three")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    pid_one, pid_two = first.stdout.split()[1], second.stdout.split()[1]
    assert first.stdout.split()[2:] == ["one"] and second.stdout.split()[2:] == ["two", "--three"]
    assert pid_one == pid_two
    assert int(pid_one) != server.pid  # the pool's worker, not the server


def test_a_scripts_output_arrives_while_it_still_runs(server: Server, warm: str) -> None:
    flag = server.root / "release"
    name = script(server, "slow.py", f"""
        import pathlib, sys, time
        print("started", flush=True)
        print("to stderr", file=sys.stderr, flush=True)
        while not pathlib.Path({str(flag)!r}).exists():
            time.sleep(0.05)
        print("finished")
    """)
    process = server.popen("compute", "run", warm, name)
    try:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == "started\n"  # the script is still waiting for the flag
        assert process.stderr.readline() == "to stderr\n"
        assert process.poll() is None
        flag.write_text("go")
        assert process.stdout.read() == "finished\n"
        assert process.wait(timeout=60) == 0
    finally:
        flag.write_text("go")
        process.kill()
        process.wait()


@pytest.mark.parametrize("exit_with, code", [("sys.exit(0)", 0), ("sys.exit(3)", 3), ("pass", 0),
                                             ("sys.exit('bad input')", 1)])
def test_the_scripts_exit_code_is_the_commands(server: Server, warm: str, exit_with: str, code: int) -> None:
    name = script(server, "exits.py", f"import sys\nprint('ran')\n{exit_with}\n")
    done = server.sky("compute", "run", warm, name)
    assert done.stdout == "ran\n"
    assert done.returncode == code, done.stderr
    if code == 1:
        assert done.stderr == "bad input\n"


def test_an_uncaught_exception_shows_the_users_own_traceback_and_exits_1(server: Server, warm: str) -> None:
    name = script(server, "fails.py", """
        def load(path):
            raise FileNotFoundError(path)

        load("data.csv")
    """)
    done = server.sky("compute", "run", warm, name)
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert 'File "fails.py", line 5, in <module>' in done.stderr and 'load("data.csv")' in done.stderr
    assert done.stderr.rstrip().endswith("FileNotFoundError: data.csv")
    assert "runpy" not in done.stderr and "skyward" not in done.stderr


def test_pools_are_listed_and_described(server: Server, warm: str) -> None:
    listed = json.loads(server.sky("compute", "list", "--json").stdout)["pools"]
    assert [p["name"] for p in listed] == ["warm"]
    described = json.loads(server.sky("compute", "get", warm, "--json").stdout)
    assert described["state"] == "ready" and described["nodes"] == 1
    assert described["provider"] == "local"


def test_a_pool_comes_from_skyward_toml_by_name(server: Server) -> None:
    (server.root / "skyward.toml").write_text(
        '[pools.fromfile]\nprovider = "local"\nnodes = 2\n[pools.fromfile.image]\nenv = { GREETING = "hi" }\n'
    )
    try:
        created = server.sky("compute", "create", "fromfile", "--json")
        assert created.returncode == 0, created.stderr
        assert json.loads(created.stdout)["nodes"] == 2
        name = script(server, "greet.py", "import os, skyward as sky\n"
                                          "print(sky.instance_info().node, os.environ['GREETING'])\n")
        done = server.sky("compute", "run", "--node", "all", "fromfile", name)
        assert done.returncode == 0, done.stderr
        assert sorted(done.stdout.splitlines()) == ["[node 0] 0 hi", "[node 1] 1 hi"]
        rank = server.sky("compute", "run", "--node", "1", "fromfile", name)
        assert rank.stdout == "1 hi\n"
    finally:
        (server.root / "skyward.toml").unlink()
        server.sky("compute", "delete", "fromfile")


def test_a_deleted_pool_is_gone_and_its_worker_ended(server: Server) -> None:
    assert server.sky("compute", "create", "brief", "--provider", "local").returncode == 0
    ran = server.sky("compute", "run", "brief", script(server, "pid.py", PID_SCRIPT))
    worker = int(ran.stdout.split()[1])
    deleted = server.sky("compute", "delete", "brief")
    assert deleted.returncode == 0, deleted.stderr
    assert wait_gone(worker)
    gone = server.sky("compute", "get", "brief")
    assert gone.returncode == 1 and "no pool 'brief'" in gone.stderr


def test_unknown_pools_and_names_are_refused_with_the_fix(server: Server) -> None:
    run = server.sky("compute", "run", "nosuch", script(server, "pid.py", PID_SCRIPT))
    assert run.returncode == 1 and "sky compute create nosuch" in run.stderr
    create = server.sky("compute", "create", "nosuch")
    assert create.returncode == 1 and "--provider local" in create.stderr
    bad = server.sky("compute", "create", "typo", "--provider", "local", "--nodes", "2",
                     "--provider-option", "no_such_field=1")
    assert bad.returncode == 1 and "no_such_field" in bad.stderr
    assert "Traceback" not in run.stderr + create.stderr + bad.stderr


def test_server_stop_ends_every_pool_process(fresh: Server) -> None:
    fresh.start()
    assert fresh.sky("compute", "create", "doomed", "--provider", "local").returncode == 0
    worker = int(fresh.sky("compute", "run", "doomed", script(fresh, "pid.py", PID_SCRIPT)).stdout.split()[1])
    assert alive(worker)
    stopped = fresh.sky("server", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert wait_gone(fresh.pid) and wait_gone(worker)
    assert not (fresh.home / "server" / "server.json").exists()
    assert fresh.sky("server", "status").returncode == 1


def test_the_server_status_names_its_url(server: Server) -> None:
    status = json.loads(server.sky("server", "status", "--json").stdout)
    assert status["url"] == server.url and status["pid"] == server.pid


def test_clients_find_the_server_through_the_environment(server: Server, tmp_path: Path) -> None:
    elsewhere = Server(tmp_path)  # another home: no server.json, no token file
    elsewhere.env.update(SKYWARD_SERVER_URL=server.url, SKYWARD_SERVER_TOKEN=server.token)
    assert json.loads(elsewhere.sky("server", "status", "--json").stdout)["pid"] == server.pid
    elsewhere.env.pop("SKYWARD_SERVER_TOKEN")
    refused = elsewhere.sky("compute", "list")
    assert refused.returncode == 1 and "SKYWARD_SERVER_TOKEN" in refused.stderr


def test_a_pool_unused_for_the_idle_timeout_is_ended(fresh: Server) -> None:
    # 6 s: time for the next `sky` command to start and reach the pool on a loaded machine (with
    # 2 s a slow CLI start found the pool ended before its run).
    fresh.start("--idle-timeout", "6")
    assert fresh.sky("compute", "create", "idle", "--provider", "local").returncode == 0
    ran = fresh.sky("compute", "run", "idle", script(fresh, "pid.py", PID_SCRIPT))
    assert ran.returncode == 0, ran.stderr
    worker = int(ran.stdout.split()[1])
    assert fresh.request("GET", "/v1/pools/idle")[0] == 200  # still there right after a run
    deadline = time.monotonic() + 30
    while fresh.request("GET", "/v1/pools")[1]["pools"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fresh.request("GET", "/v1/pools")[1]["pools"] == []
    assert wait_gone(worker)


def test_sky_log_exports_a_pools_runs_and_events_after_it_is_deleted(server: Server) -> None:
    assert server.sky("compute", "create", "logged", "--provider", "local").returncode == 0
    assert server.sky("compute", "run", "logged", script(server, "three.py", "import sys\nsys.exit(3)\n"),
                      "--fast").returncode == 3
    assert server.sky("compute", "delete", "logged").returncode == 0

    lines = [json.loads(line) for line in server.sky("log", "logged").stdout.splitlines()]
    runs = [line for line in lines if line["kind"] == "run"]
    assert [(r["script"], r["argv"], r["node"], r["exit_code"]) for r in runs] == [
        ("three.py", ["--fast"], "head", 3)
    ]
    assert runs[0]["ended"] >= runs[0]["started"]
    kinds = [line["type"] for line in lines if line["kind"] == "event"]
    assert kinds.index("ClusterReady") < kinds.index("TaskStarted") < kinds.index("ClusterDestroyed")
    assert "Log" not in kinds and "Metric" not in kinds

    page = server.sky("log", "logged", "--format", "markdown").stdout
    assert page.startswith("# Pool `logged`\n") and "no longer holds" in page
    assert re.search(r"^\| \d+ \| three\.py \| --fast \| head \| [-\d: ]+ \| [\d.]+ \| 3 \|$", page, re.M)
    assert server.sky("log", "logged", "-o", "history.ipynb").returncode == 0
    notebook = json.loads((server.root / "history.ipynb").read_text())
    assert notebook["nbformat"] == 4 and notebook["cells"][0]["source"][0] == "# Pool `logged`\n"
    namespace: dict = {}
    exec("".join(notebook["cells"][-1]["source"]), namespace)  # the data cell runs as written
    assert [run["exit_code"] for run in namespace["history"]["runs"]] == [3]
    assert server.sky("log", "never-made").returncode == 1


def test_files_go_up_to_every_node_and_come_back_down(server: Server, tmp_path: Path) -> None:
    assert server.sky("compute", "create", "files", "--provider", "local", "--nodes", "2").returncode == 0
    try:
        data = server.root / "dataset"
        (data / "part").mkdir(parents=True)
        (data / "part" / "rows.csv").write_text("a,b\n1,2\n")
        target = tmp_path / "on-nodes"
        up = server.sky("compute", "upload", "files", "dataset", str(target), "--json")
        assert up.returncode == 0, up.stderr
        written = json.loads(up.stdout)["written"]
        assert sorted(written) == ["0", "1"]
        assert str(target / "dataset" / "part" / "rows.csv") in written["1"]
        rows = target / "dataset" / "part" / "rows.csv"
        reader = script(server, "read.py", f"print(open({str(rows)!r}).read(), end='')")
        assert server.sky("compute", "run", "--node", "1", "files", reader).stdout == "a,b\n1,2\n"

        back = tmp_path / "back"
        down = server.sky("compute", "download", "--node", "1", "files", str(target / "dataset"), str(back))
        assert down.returncode == 0, down.stderr
        assert (back / "dataset" / "part" / "rows.csv").read_text() == "a,b\n1,2\n"
        missing = server.sky("compute", "download", "files", str(tmp_path / "nothing-here"))
        assert missing.returncode == 1 and "no such file or folder on node" in missing.stderr
    finally:
        server.sky("compute", "delete", "files")


def test_a_file_of_several_chunks_goes_up_and_comes_back_whole(server: Server, tmp_path: Path) -> None:
    import os

    from skyward.server.files import CHUNK

    assert server.sky("compute", "create", "blobs", "--provider", "local", "--nodes", "2").returncode == 0
    try:
        blob = server.root / "blob.bin"
        blob.write_bytes(os.urandom(3 * CHUNK + 7))  # random: several chunks once gzipped
        target = tmp_path / "blobs-on-nodes"
        up = server.sky("compute", "upload", "blobs", "blob.bin", str(target), "--json")
        assert up.returncode == 0, up.stderr
        assert (target / "blob.bin").read_bytes() == blob.read_bytes()
        back = tmp_path / "blobs-back"
        down = server.sky("compute", "download", "--node", "1", "blobs", str(target / "blob.bin"), str(back))
        assert down.returncode == 0, down.stderr
        assert (back / "blob.bin").read_bytes() == blob.read_bytes()
    finally:
        server.sky("compute", "delete", "blobs")


def test_view_shows_the_pools_latest_metrics_and_events(server: Server, warm: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        done = server.sky("compute", "view", warm, "--once", "--json")
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        # Each figure comes as it is sampled: memory at once, cpu from its second sample on.
        if "cpu" in seen["metrics"].get("0", {}) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert seen["pool"]["state"] == "ready"
    assert "cpu" in seen["metrics"]["0"] and seen["metrics"]["0"]["cpu"]["unit"] == "%"
    assert "ClusterReady" in [event["type"] for event in seen["events"]] or len(seen["events"]) == 20
    drawn = server.sky("compute", "view", warm, "--once")
    assert drawn.returncode == 0, drawn.stderr
    assert "cpu" in drawn.stdout and seen["events"][-1]["type"] in drawn.stdout


def test_files_reach_an_ssh_pools_node_in_chunks_and_come_back(fresh: Server, ssh_host: SSHHosts) -> None:
    import os

    from test_server_restart import ssh_config, wait_ready

    from skyward.server.files import CHUNK

    ssh_config(ssh_host, fresh.root)
    fresh.start()
    assert fresh.sky("compute", "create", "remote").returncode == 0
    wait_ready(fresh, "remote")
    blob = fresh.root / "blob.bin"
    blob.write_bytes(os.urandom(2 * CHUNK + 5))
    up = fresh.sky("compute", "upload", "remote", "blob.bin", "inbox", "--json")
    assert up.returncode == 0, up.stderr
    (written,) = json.loads(up.stdout)["written"]["0"]
    assert written.startswith(str(ssh_host.servers[0].home)) and written.endswith("inbox/blob.bin")
    down = fresh.sky("compute", "download", "remote", "inbox/blob.bin", str(fresh.root / "back"))
    assert down.returncode == 0, down.stderr
    assert (fresh.root / "back" / "blob.bin").read_bytes() == blob.read_bytes()
    assert fresh.sky("server", "stop").returncode == 0
