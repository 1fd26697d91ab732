"""A Python script's `sky.Compute(name=NAME)` attaches to the pool a server holds: no provisioning,
the same warm workers `sky compute run` uses, and the pool stays when the block ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import Server

CLIENT = """
import os, sys, time
import skyward as sky

@sky.function
def where(x):
    return x * 2, os.getpid(), sky.instance_info().node

@sky.function
def count(n):
    yield from range(n)

@sky.function
def fails():
    raise KeyError("missing")

started = time.perf_counter()
with sky.Compute(name="shared") as pool:
    first = where(1) >> pool
    took = time.perf_counter() - started
    print(json.dumps({
        "kind": type(pool).__name__, "first": first, "seconds": took,
        "everyone": where(2) @ pool, "group": (where(3) & where(4)) >> pool,
        "future": (where(5) > pool).result(), "mapped": pool.map(lambda v: v + 1, [1, 2]),
        "streamed": list(count(3) >> sky), "nodes": pool.current_nodes(),
    }))
    try:
        fails() >> pool
    except KeyError as error:
        print("raised", error)
"""


@pytest.fixture(scope="module")
def shared(server: Server) -> Iterator[str]:
    done = server.sky("compute", "create", "shared", "--provider", "local", "--nodes", "2")
    assert done.returncode == 0, done.stderr
    yield "shared"


def python(server: Server, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "import json\n" + textwrap.dedent(code)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=server.root,
                          env={**server.env, **env})


def test_a_script_attaches_to_the_servers_pool_by_name(server: Server, shared: str) -> None:
    (server.root / "pid.py").write_text("import os\nprint(os.getpid())\n")
    warm = int(server.sky("compute", "run", "--node", "0", shared, "pid.py").stdout)
    done = python(server, CLIENT, SKYWARD_SERVER_URL=server.url)
    assert done.returncode == 0, done.stderr
    first_line, raised = done.stdout.splitlines()
    seen = json.loads(first_line)
    assert seen["kind"] == "AttachedPool"
    value, pid, node = seen["first"]
    assert value == 2 and pid in {p for _, p, _ in seen["everyone"]}
    assert sorted(n for _, _, n in seen["everyone"]) == [0, 1]
    assert [p for _, p, n in seen["everyone"] if n == 0] == [warm]  # the worker `sky compute run` used
    assert [v for v, _, _ in seen["group"]] == [6, 8] and seen["future"][0] == 10
    assert seen["mapped"] == [2, 3] and seen["streamed"] == [0, 1, 2] and seen["nodes"] == 2
    assert raised == "raised 'missing'"
    assert seen["seconds"] < 5  # no provisioning, no bootstrap (benchmarks/server_attach.py times it)


GATED = """
import os, sys
import skyward as sky

@sky.function
def gated(path):
    import os, time
    yield "first"
    deadline = time.time() + 30
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.05)
    yield "opened" if os.path.exists(path) else "timed out"

@sky.function
def square(x):
    return x * x

with sky.Compute(name="shared") as pool:
    items = gated(sys.argv[1]) >> pool
    print(next(items), flush=True)
    open(sys.argv[1], "w").close()  # the generator's second item waits for this
    print(next(items), list(items), flush=True)
    print(sorted(sky.gather(square(2), square(3), stream=True, ordered=False) >> pool))
"""


def test_a_generators_items_reach_an_attached_script_while_it_still_runs(
    server: Server, shared: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    command = [sys.executable, "-c", GATED, str(gate)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=server.root,
                          env={**server.env, "SKYWARD_SERVER_URL": server.url})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["first", "opened []", "[4, 9]"]


def test_an_attached_script_resizes_the_servers_pool(server: Server) -> None:
    assert server.sky("compute", "create", "elastic", "--provider", "local", "--nodes", "1").returncode == 0
    code = """
        import skyward as sky
        with sky.Compute(name="elastic") as pool:
            pool.resize(2)
            print(pool.current_nodes())
    """
    try:
        done = python(server, code, SKYWARD_SERVER_URL=server.url)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["2"]
        assert json.loads(server.sky("compute", "get", "elastic", "--json").stdout)["nodes"] == 2
    finally:
        server.sky("compute", "delete", "elastic")


def test_pool_on_in_an_attached_script_sees_the_servers_task_events(server: Server, shared: str) -> None:
    code = """
        import time
        import skyward as sky

        @sky.function
        def double(x):
            return 2 * x

        seen = []
        with sky.Compute(name="shared") as pool:
            off = pool.on(sky.TaskCompleted, lambda event: seen.append(event.name))
            results = [double(i) >> pool for i in range(3)]
            deadline = time.time() + 10
            while len(seen) < 3 and time.time() < deadline:
                time.sleep(0.05)
            off()
            double(9) >> pool
            time.sleep(0.5)
        print(results, seen, type(pool).__name__)
    """
    done = python(server, code, SKYWARD_SERVER_URL=server.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[0, 2, 4] ['double', 'double', 'double'] AttachedPool"


def test_leaving_the_block_detaches_and_the_pool_stays(server: Server, shared: str) -> None:
    assert python(server, CLIENT, SKYWARD_SERVER_URL=server.url).returncode == 0
    described = json.loads(server.sky("compute", "get", shared, "--json").stdout)
    assert described["state"] == "ready" and described["nodes"] == 2


def test_options_server_names_the_server_explicitly(server: Server, shared: str) -> None:
    code = f"""
        import skyward as sky
        with sky.Compute(name="shared", options=sky.Options(server={server.url!r})) as pool:
            print(type(pool).__name__, pool.current_nodes())
    """
    done = python(server, code)
    assert done.stdout == "AttachedPool 2\n", done.stderr


def test_a_name_the_server_does_not_hold_starts_a_pool_of_the_scripts_own(server: Server) -> None:
    (server.root / "skyward.toml").write_text('[pools.mine]\nprovider = "local"\n')
    try:
        code = """
            import skyward as sky
            with sky.Compute(name="mine", console=False) as pool:
                print(type(pool).__name__)
        """
        done = python(server, code, SKYWARD_SERVER_URL=server.url)
        assert done.stdout == "Pool\n", done.stderr
    finally:
        (server.root / "skyward.toml").unlink()


def test_an_unreachable_server_named_explicitly_is_an_error(server: Server) -> None:
    code = """
        import skyward as sky
        try:
            sky.Compute(name="shared", server="http://127.0.0.1:9")
        except sky.ConfigurationError as error:
            print(error)
    """
    done = python(server, code)
    assert "cannot reach the Skyward server at http://127.0.0.1:9" in done.stdout, done.stderr


def test_the_attach_benchmark_runs(tmp_path: Path) -> None:
    """benchmarks/server_attach.py end to end, once (it asserts no timing; neither does this)."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "server_attach.py"
    out = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKYWARD_SERVER")}
    command = [sys.executable, str(script), "--repeat", "1", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["fresh_ms"] > 0 and result["attached_ms"] > 0


def test_options_server_must_be_a_url() -> None:
    import skyward as sky

    with pytest.raises(sky.ConfigurationError, match="http://127.0.0.1:8470"):
        sky.Options(server="localhost:8470")
    assert sky.Options(server="http://127.0.0.1:8470").server == "http://127.0.0.1:8470"


CONCURRENT = """
import concurrent.futures
import skyward as sky
from project_tasks import triple

with sky.Compute(name="shared") as pool:
    with concurrent.futures.ThreadPoolExecutor(32) as threads:
        ballast = [str(i) for i in range(50_000)]  # pickling takes long enough for the calls to overlap
        calls = [threads.submit(lambda v: triple(v, ballast) >> pool, v) for v in range(200)]
        answers, failures = [], []
        for call in calls:
            try:
                answers.append(call.result())
            except Exception as error:  # noqa: BLE001 - counted below
                failures.append(repr(error))
    print(json.dumps({"answers": answers, "failures": failures[:3], "failed": len(failures)}))
"""


def test_concurrent_calls_from_an_attached_script_share_its_modules_registration(
    server: Server, shared: str
) -> None:
    # A module of the project (under the script's folder) travels by value: every call registers
    # it for its pickling, and 200 at once from 32 threads must not unregister it under each other.
    (server.root / "project_tasks.py").write_text(
        "import skyward as sky\n\n@sky.function\ndef triple(x, ballast):\n    return 3 * x\n"
    )
    done = python(server, CONCURRENT, SKYWARD_SERVER_URL=server.url)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["failed"] == 0, seen["failures"]
    assert seen["answers"] == [3 * v for v in range(200)]
