"""The README's Python blocks run as written, and its two set-up commands exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, re.S)


def test_every_readme_python_block_runs() -> None:
    for block in python_blocks():
        script = block.replace("sky.Compute(provider=sky.Local(), nodes=2)", "sky.Compute(provider=sky.Local(), nodes=2, console=False)")
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert result.returncode == 0, result.stderr


def test_quickstart_prints_what_its_comments_promise() -> None:
    quickstart = python_blocks()[1]
    out = subprocess.run([sys.executable, "-c", quickstart], capture_output=True, text=True, timeout=120, check=True).stdout
    first, second, third = out.strip().splitlines()
    assert first.startswith("20 ['node 0 of 4', 'node 1 of 4', 'node 2 of 4', 'node 3 of 4'] 2 4 20 [2, 3, 4] [2, 4]")
    assert second == "499500 [0, 1, 4, 9, 16]"
    assert third == "4"


def test_readme_names_the_two_setup_scripts_and_they_exist() -> None:
    commands = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert [c.strip() for c in commands[:2]] == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert (ROOT / "scripts/demo.sh").exists() and (ROOT / "scripts/test.sh").exists()
    assert "scripts/test.sh" in (ROOT / ".ci/run").read_text()
