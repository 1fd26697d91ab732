"""The reference's collections example runs unchanged (examples/shared_state.py holds it as the
reference writes it, with stand-ins for `save_progress`, `do_part_one` and `do_part_two`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(180)


def test_the_reference_collections_example_runs_as_written() -> None:
    result = subprocess.run(
        [sys.executable, "examples/shared_state.py"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "first pass: (0, 1, 2, 3, 4, 5, 6, 7)",
        "second pass: (None, None, None, None, None, None, None, None)",
        "processed: 8",
        "every node finished part one before any began part two: True",
    ]


def test_the_example_holds_the_reference_code_verbatim() -> None:
    source = (ROOT / "examples" / "shared_state.py").read_text()
    reference = (
        "@sky.function\ndef worker(item):\n    processed = sky.counter(\"processed\")\n"
        "    seen = sky.set(\"seen\")\n    if item in seen:\n        return None\n    seen.add(item)\n"
        "    processed.increment()\n    with sky.lock(\"checkpoint\"):\n        save_progress()\n"
        "    return item\n"
    )
    assert reference in source
    assert "    b = sky.barrier(\"sync\", n=4)\n    do_part_one()\n    b.wait()" in source
