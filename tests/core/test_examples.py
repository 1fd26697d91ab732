"""Every script in examples/ runs as a newcomer would run it, and prints what it promises."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_example(name: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python examples/<name>` from the repository root, as the README tells a newcomer to run it."""
    result = subprocess.run(
        [sys.executable, f"examples/{name}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"{name} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def lines(text: str) -> list[str]:
    return text.splitlines()


def test_hello() -> None:
    out = run_example("hello.py").stdout
    assert re.search(r"^calling greet\(\) gave: PendingFunction\(greet", out, re.M)
    greeting = re.search(r"^greet: hello world, from pid (\d+)", out, re.M)
    me = re.search(r"^my pid: (\d+)", out, re.M)
    assert greeting and me and greeting[1] != me[1], out  # ran in a worker process, not here
    assert "add(2, 3) = 5" in lines(out)
    assert "add(40, 2) via >> sky = 42" in lines(out)
    assert "nodes ready: 2" in lines(out)
    assert "add.local(1, 1) = 2" in lines(out)


def test_parallel() -> None:
    out = run_example("parallel.py").stdout
    assert "& group: 4 9 16" in lines(out)
    assert "gather: [0, 1, 4, 9, 16, 25, 36, 49]" in lines(out)
    assert "gather stream arrival order: [2, 1]" in lines(out)  # the fast call came back first
    assert "map: [1, 8, 27, 64]" in lines(out)
    assert "futures: [(0, 0), (1, 1), (2, 4), (3, 9)]" in lines(out)
    assert "distinct worker processes used: 2" in lines(out)


def test_broadcast() -> None:
    result = run_example("broadcast.py")
    out = result.stdout
    node_lines = [line for line in lines(out) if line.startswith("node info:")]
    assert len(node_lines) == 2
    assert "'node': 0, 'total_nodes': 2, 'is_head': True" in node_lines[0]
    assert "'node': 1, 'total_nodes': 2, 'is_head': False" in node_lines[1]
    assert "losses from every node: [1.0, 0.5]" in lines(out)
    assert re.search(r"^head only: \{'node': 0, .*'is_head': True", out, re.M)
    # @sky.stdout(only="head"): the head's print reaches the console, node 1's is discarded.
    assert "[node 0] step 0: loss 1.000" in result.stderr
    assert "[node 1] step 0" not in result.stderr


def test_sharding() -> None:
    out = run_example("sharding.py").stdout
    assert "node 0: 50 items starting at 1, partial sum 1275" in lines(out)
    assert "node 1: 50 items starting at 51, partial sum 3775" in lines(out)
    assert "total of partial sums: 5050 (expected 5050)" in lines(out)
    assert "node 0: 10 rows as ndarray, slope 3.00" in lines(out)
    assert "node 1: 10 rows as ndarray, slope 3.00" in lines(out)
    assert "shuffled shards cover all 20 rows, overlap: 0 rows" in lines(out)


def test_streaming() -> None:
    out = run_example("streaming.py").stdout
    countdown = [int(m) for m in re.findall(r"^countdown (\d) at", out, re.M)]
    assert countdown == [5, 4, 3, 2, 1]
    assert "first above 10: 11" in lines(out)
    produced = re.search(r"^client produced only (\d+) items", out, re.M)
    assert produced and 12 <= int(produced[1]) <= 64, out  # lazily pulled, never the endless rest
    assert "doubled: [0, 2, 4, 6, 8, 10]" in lines(out)
    assert "stopped an endless-ish stream early at 997" in lines(out)


def test_joblib_parallel() -> None:
    out = run_example("joblib_parallel.py").stdout
    assert "squares: [0, 1, 4, 9, 16, 25, 36, 49, 64, 81]" in lines(out)  # the README's snippet
    assert "results in order: True" in lines(out)
    assert "ran in this process: False" in lines(out)  # the pool's workers ran the calls
    assert "ValueError from a task: no good: 3" in lines(out)
    assert "after the pool: [0, 1, 8, 27]" in lines(out)


@pytest.mark.slow
def test_run_all_runs_every_example() -> None:
    out = run_example("run_all.py").stdout
    every_example = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "run_all.py")
    assert len(every_example) == 7  # a new example file is run by the demo too, not left out
    for name in every_example:
        assert f"=== {name} " in out
        assert f"--- {name} ok" in out
    assert "all 7 examples passed" in lines(out)


def test_run_all_stops_loudly_at_the_first_failure(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "run_all.py", tmp_path / "run_all.py")
    (tmp_path / "hello.py").write_text("print('hello ran')\n")
    (tmp_path / "parallel.py").write_text("import sys\nprint('parallel ran')\nsys.exit(3)\n")
    (tmp_path / "broadcast.py").write_text("print('broadcast ran')\n")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "run_all.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 3
    assert "hello ran" in result.stdout and "parallel ran" in result.stdout
    assert "broadcast ran" not in result.stdout
    assert "FAILED: parallel.py exited with status 3" in result.stderr
