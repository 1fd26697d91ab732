"""The defaults case (benchmarks/case_defaults.py) runs end to end (`--quick`): three fresh pools, the
default console piped to a file and on a pseudo-terminal, and `console=False, logging=False`,
measured in turns. It asserts no timing, only that every figure and target row is there.

`$SKYWARD_HOME` points into the test's folder, so the default log file lands there and not in the
home directory of whoever runs the tests (the option itself stays the default).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODES = ("piped", "terminal", "quiet")
KEYS = [
    *(f"defaults.p50_{m}" for m in MODES),
    *(f"defaults.tps_{m}" for m in MODES),
    *(f"defaults.{f}_{m}_vs_quiet" for m in ("piped", "terminal") for f in ("p50", "tps")),
]


def test_the_defaults_case_reports_each_configuration_and_its_ratio_to_quiet(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    env = dict(os.environ, SKYWARD_HOME=str(tmp_path / "home"))
    command = [
        sys.executable, str(ROOT / "benchmarks" / "run.py"),
        "--quick", "--repeat", "1", "--only", "defaults", "--json", str(out),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    figures = {f["key"]: f for f in report["figures"]}
    assert list(figures) == KEYS
    for key, figure in figures.items():
        assert figure["label"] in result.stdout
        skyward = figure["values"]["Skyward"]
        assert isinstance(skyward, dict) and skyward["median"] > 0, (key, skyward)
        assert {figure["values"][p] for p in ("Ray", "Dask", "loky", "ProcessPool")} == {"n/a"}
    rows = [t for t in report["targets"] if t["target"].startswith("defaults (")]
    assert len(rows) == 4 and all(t["status"] in ("met", "MISSED") for t in rows), rows
    assert (tmp_path / "home" / "logs" / "skyward.log").exists()  # the default log, kept on
