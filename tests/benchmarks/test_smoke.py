"""The benchmark suite runs end to end (`--quick`), so it cannot rot. It asserts no timing.

Ray and Dask are hidden (an import of them fails), so the run takes seconds whatever is installed
and checks that a missing peer is reported as "missing", not dropped; loky and the standard
ProcessPoolExecutor run when present.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = [
    "floor", "start", "latency", "throughput", "payload", "joblib", "ssh", "bootstrap", "linger",
    "collections",
]
ROWS = {
    "start": ["start.pool2", "start.shutdown2", "start.pool4", "start.shutdown4"],
    "latency": ["latency.p50", "latency.p99", "latency.vs_pipe", "latency.vs_mp_pipe"],
    "throughput": ["throughput.tasks_per_s"],
    "payload": ["payload.to_worker", "payload.from_worker"],
    "joblib": ["joblib.wall"],
    "ssh": [
        "ssh.p50", "ssh.tasks_per_s", "ssh.cold_start_s", "ssh.warm_start_s", "ssh.floor_p50", "ssh.vs_floor",
        "ssh.floor_unpadded_p50", "ssh.vs_floor_unpadded", "ssh.local_tasks_per_s", "ssh.local_vs_ssh",
        "ssh.payload_MBps", "ssh.payload_floor_MBps",
        "ssh.payload_vs_floor", "ssh.payload_one_MBps", "ssh.channel_MBps",
    ],
    "bootstrap": ["bootstrap.cold_s", "bootstrap.floor_s", "bootstrap.vs_floor", "bootstrap.overlap"],
    "linger": ["linger.new_pool_s", "linger.adopted_pool_s"],
    "collections": [
        "collections.increment_p50", "collections.noop_p50", "collections.vs_noop",
        "collections.strong_per_s", "collections.eventual_per_s", "collections.eventual_vs_strong",
        "collections.total_thread", "collections.total_process",
    ],
}
FLOOR = [
    "floor.pingpong_p50",
    "floor.call_p50",
    "floor.pipe",
    "floor.memcpy",
    "floor.lz4_random",
    "floor.lz4_zeros",
    "floor.mp_pingpong_p50",
    "floor.mp_pipe",
]
HIDDEN = ("ray", "distributed")


def test_quick_run_writes_the_table_and_json(tmp_path: Path) -> None:
    shims = tmp_path / "hide"
    shims.mkdir()
    for name in HIDDEN:
        (shims / f"{name}.py").write_text("raise ImportError('hidden by the benchmark smoke test')\n")
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(shims), os.environ.get("PYTHONPATH", "")) if p)
    )
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--quick",
            "--repeat",
            "1",
            "--only",
            ",".join(CASES),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    table = result.stdout
    for header in ("Skyward", "Ray", "Dask", "loky", "ProcessPool", "vs best peer", "physical floor"):
        assert header in table
    report = json.loads(out.read_text())
    figures = {f["key"]: f for f in report["figures"]}
    assert list(figures) == [key for case in CASES if case in ROWS for key in ROWS[case]]
    for key, figure in figures.items():
        assert figure["label"] in table
        skyward = figure["values"]["Skyward"]
        assert isinstance(skyward, dict) and skyward["median"] > 0, (key, skyward)
        for peer in ("Ray", "Dask"):
            assert figure["values"][peer] in ("missing", "n/a"), (key, figure["values"][peer])
        for peer in ("loky", "ProcessPool"):
            value = figure["values"][peer]
            assert value in ("missing", "n/a") or value["median"] > 0, (key, peer, value)
    assert "missing" in table
    assert [f["key"] for f in report["floor"]] == FLOOR
    assert all(f["values"]["floor"]["median"] > 0 for f in report["floor"])
    assert {t["status"] for t in report["targets"]} <= {"met", "MISSED", "n/a", "-"}
    context = [t for t in report["targets"] if t["target"] == "latency p50 vs pickled call ping-pong"]
    assert context and context[0]["status"] == "-" and context[0]["measured"].endswith("x")
    unpadded_row = "ssh: no-op p50 vs echo without IGNORE padding"
    unpadded = [t for t in report["targets"] if t["target"] == unpadded_row]
    assert unpadded and unpadded[0]["status"] == "-" and unpadded[0]["measured"].endswith("x")
    latency = {t["target"]: t for t in report["targets"] if t["target"].startswith("latency p50 vs")}
    for floor in ("pipe ping-pong", "multiprocessing.Pipe ping-pong"):
        assert latency[f"latency p50 vs {floor}"]["status"] in ("met", "MISSED"), latency


def test_wakeup_cost_prints_the_work_hot_and_after_each_wait() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "wakeup_cost.py"), "--rounds", "50"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("|") for line in result.stdout.splitlines()[1:]]
    assert [row[0].strip() for row in rows] == [
        "none (tight loop)",
        *(f"a pipe read, {wait} us" for wait in (0, 20, 60, 200)),
    ]
    assert all(float(row[1]) > 0 and row[2].strip().endswith("x") for row in rows)
