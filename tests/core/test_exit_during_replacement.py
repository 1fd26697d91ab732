"""A pool that exits while a lost node's replacement is still starting ends that start first:
nothing of the replacement outlives the pool, and nothing reports into the pool's closed loop.

The replacement's start is made to take a second (as a cloud machine's does), so the pool's exit
falls inside it. Run in a child process, as a script: its stderr is where a replacement left
running would report ("Task was destroyed but it is pending"), and its children are what would
outlive it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = """
import os, sys
from pathlib import Path
import skyward as sky

@sky.function
def dies_once(marker):
    if not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return 7

with sky.Compute(provider=sky.Local(), nodes=2, console=False, logging=False) as pool:
    fleet, start_node = pool._fleet, pool._fleet._start_node

    async def slow_start(*args, **kwargs):  # a replacement machine that takes a while to come up
        import asyncio
        await asyncio.sleep(1.0)
        return await start_node(*args, **kwargs)

    fleet._start_node = slow_start
    pending = dies_once(sys.argv[1]) > pool   # its node is lost; the task waits for a node
    import time
    deadline = time.monotonic() + 10
    while not fleet.replacing and time.monotonic() < deadline:  # the replacement has begun
        time.sleep(0.005)
    replacing = bool(fleet.replacing)
print("replacing at exit:", replacing, flush=True)
try:
    print("task:", pending.result(timeout=30), flush=True)
except Exception as error:
    print("task:", type(error).__name__, flush=True)
def child_of_ours(p):
    try:  # a process may end between the listing and the reads: it is not left over
        return (b"skyward" in open(f"/proc/{p}/cmdline", "rb").read() and int(p) != os.getpid()
                and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1] == str(os.getpid()))
    except OSError:
        return False
workers = [p for p in os.listdir("/proc") if p.isdigit() and child_of_ours(p)]
print("children left:", workers, flush=True)
"""


def test_exiting_while_a_replacement_starts_leaves_nothing_running_and_reports_nothing(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), str(tmp_path / "marker")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "replacing at exit: True" in done.stdout  # the case under test did arise
    assert "children left: []" in done.stdout
    assert "task: " in done.stdout  # answered or failed, never left hanging
    for sign in ("Traceback", "no running event loop", "destroyed but it is pending"):
        assert sign not in done.stderr, done.stderr
