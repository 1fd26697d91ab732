"""The rich console in a real terminal (tmux's): live metrics per node while a task runs, and a
clean final screen: no spinner left, no line printed over it, the summary at the end.

tmux must be installed (scripts/test.sh installs it); its absence fails the test loudly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = '''
import time
import skyward as sky

@sky.function
def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    print("task done")
    return sky.instance_info().node

image = sky.Image(metrics=[sky.metrics.CPU(interval=0.2), sky.metrics.Memory(interval=0.2)])
with sky.Compute(provider=sky.Local(), nodes=2, image=image, logging=False) as pool:
    print("RESULT", sorted(spin(4.0) @ pool))
print("END")
'''

SPINNER = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")


class Terminal:
    """One tmux server of our own (its own socket), with one 120x40 window running a command."""

    def __init__(self, folder: Path) -> None:
        self.socket = f"skyward-test-{uuid.uuid4().hex[:8]}"
        self.folder = folder

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-x", "120", "-y", "40", "-c", str(self.folder), command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def wait_for(self, predicate, timeout: float = 60.0) -> str:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        screen = self.screen()
        while not predicate(screen) and time.monotonic() < deadline:
            time.sleep(0.1)
            screen = self.screen()
        return screen

    def stop(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    assert shutil.which("tmux"), "tmux is not installed: scripts/test.sh installs it (apt-get install tmux)"
    term = Terminal(tmp_path)
    try:
        yield term
    finally:
        term.stop()


def test_the_rich_console_shows_live_node_metrics_and_leaves_a_clean_screen(
    terminal: Terminal, tmp_path: Path
) -> None:
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    env = f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}"
    terminal.start(f"env {env} {sys.executable} {script}; sleep 60")

    def live_rows(screen: str) -> bool:
        rows = [line for line in screen.splitlines() if line.startswith(("node 0  cpu", "node 1  cpu"))]
        return len(rows) == 2 and "task(s) running" in screen

    live = terminal.wait_for(live_rows)
    assert live_rows(live), live
    row = next(line for line in live.splitlines() if line.startswith("node 0  cpu"))
    assert set(row) & set("▁▂▃▄▅▆▇█") and "mem" in row and "%" in row, row

    final = terminal.wait_for(lambda screen: "END" in screen)
    lines = [line.rstrip() for line in final.splitlines() if line.strip()]
    assert lines[-1] == "END", final
    assert not SPINNER & set(final), final  # the spinner line is gone
    assert "task(s) running" not in final and "node 0  cpu" not in final, final
    assert "RESULT [0, 1]" in lines, final  # the user's print on a line of its own
    for line in lines:  # no line printed over another
        assert line.count("node ") <= 2 and not (line.startswith("[node") and "running" in line), line
    assert any(line.startswith("pool destroyed after") for line in lines), final
    assert "tasks: 2 done, 0 failed" in lines, final
    for node in (0, 1):
        summary = next(line for line in lines if line.startswith(f"node {node}: cpu"))
        assert "% avg" in summary and "% peak" in summary and "mem" in summary, summary
