"""The pool's task counts stay right however a task ends: the end summary of a "log" console and
the bus's tally, after a retry on another node, a time limit, a lost node, a resize and the exit.

A task the pool ends without its worker's answer used to stay counted as running, and a retried
task counted as two started and one ended: "1 running" after every result was in. Each test runs
a real Local pool and reads both the tally and the summary line the console printed.
"""

from __future__ import annotations

import io
import os
import re
import time
from pathlib import Path

import pytest
from core_support import wait_until

import skyward as sky
from skyward.observe import events as ev
from skyward.observe.console import Console
from skyward.observe.tally import TaskTally

pytestmark = pytest.mark.timeout(60)


@sky.function
def dies_once(marker: str) -> int:
    """End its worker process on the first attempt (the node is lost), answer on the next."""
    if not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return 7


@sky.function
def dies_always() -> int:
    os._exit(1)


@sky.function
def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@sky.function
def announce_then_sleep(folder: str, seconds: float) -> int:
    """Say which node runs it (a file per run), then stay in flight for a while."""
    node = sky.instance_info().node
    Path(folder, f"{node}-{os.getpid()}").touch()
    time.sleep(seconds)
    return node


def log_pool(**options: object) -> sky.Pool:
    return sky.Compute(provider=sky.Local(), nodes=2, console="log", logging=False, **options)


def replaced(pool: sky.Pool) -> None:
    """Wait for the lost node's replacement before the pool exits: a replacement still starting
    then would be left to end after the pool's loop, reporting into a closed output."""
    assert wait_until(lambda: pool.current_nodes() == 2 and not pool._fleet.replacing, timeout=20)


def counts(pool: sky.Pool) -> dict[str, int]:
    tally = pool.bus.tally
    return {"started": tally.started, "done": tally.done, "failed": tally.failed,
            "retried": tally.retried, "running": tally.running}


def settled_counts(pool: sky.Pool, expected: dict[str, int]) -> dict[str, int]:
    """The counts once they reach `expected` (within 5 s), else as they are. The tally follows the
    tasks' events, which the pool's loop emits as it hands each answer over: right after a result
    is in the caller's hands, its TaskCompleted may be a moment behind on a loaded machine."""
    wait_until(lambda: counts(pool) == expected, timeout=5)
    return counts(pool)


def summary_line(err: str) -> str:
    """The task line of the end summary: the line after "pool destroyed after ...", unstamped."""
    lines = err.splitlines()
    ends = [i for i, line in enumerate(lines) if "INFO  pool destroyed after" in line]
    assert ends, err
    following = lines[ends[-1] + 1] if ends[-1] + 1 < len(lines) else ""
    return re.sub(r"^\d\d:\d\d:\d\d INFO  ", "", following)


def test_a_task_retried_after_its_node_was_lost_counts_once_and_none_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with log_pool() as pool:
        assert dies_once(str(tmp_path / "marker")) >> pool == 7
        in_pool = settled_counts(pool, {"started": 1, "done": 1, "failed": 0, "retried": 1, "running": 0})
        replaced(pool)
    assert in_pool == {"started": 1, "done": 1, "failed": 0, "retried": 1, "running": 0}
    assert counts(pool) == in_pool
    err = capsys.readouterr().err
    assert "node 0: lost" in err or "node 1: lost" in err, err
    assert summary_line(err) == "tasks: 1 done, 0 failed, 1 retry", err


def test_a_retried_task_whose_events_a_handler_wants_counts_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[ev.Event] = []
    with log_pool() as pool:
        pool.on(sky.TaskStarted, seen.append)  # the bus counts the events, not the node
        pool.on(sky.TaskCompleted, seen.append)
        assert dies_once(str(tmp_path / "marker")) >> pool == 7
        replaced(pool)
    assert [type(e).__name__ for e in seen] == ["TaskStarted", "TaskStarted", "TaskCompleted"]
    assert counts(pool) == {"started": 1, "done": 1, "failed": 0, "retried": 1, "running": 0}
    assert summary_line(capsys.readouterr().err) == "tasks: 1 done, 0 failed, 1 retry"


def test_a_task_past_its_time_limit_counts_as_failed_not_running(capsys: pytest.CaptureFixture[str]) -> None:
    with log_pool() as pool:
        with pytest.raises(TimeoutError):
            sleep_for(3).with_timeout(0.5) >> pool
        in_pool = settled_counts(pool, {"started": 1, "done": 0, "failed": 1, "retried": 0, "running": 0})
    assert in_pool == {"started": 1, "done": 0, "failed": 1, "retried": 0, "running": 0}
    err = capsys.readouterr().err
    assert re.search(r"ERROR task sleep_for#\d+ failed on node \d after .*: TimeoutError", err), err
    assert summary_line(err) == "tasks: 0 done, 1 failed", err


def test_a_lost_task_with_no_retry_left_counts_as_failed(capsys: pytest.CaptureFixture[str]) -> None:
    with log_pool(retry_on_interruption=0) as pool:
        with pytest.raises(sky.NodeLostError):
            dies_always() >> pool
        in_pool = settled_counts(pool, {"started": 1, "done": 0, "failed": 1, "retried": 0, "running": 0})
        replaced(pool)
    assert in_pool == {"started": 1, "done": 0, "failed": 1, "retried": 0, "running": 0}
    err = capsys.readouterr().err
    assert re.search(r"ERROR task dies_always#\d+ failed on node \d .*: NodeLostError", err), err
    assert summary_line(err) == "tasks: 0 done, 1 failed", err


def test_a_task_lost_on_every_retry_counts_its_retries_and_one_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with log_pool(retry_on_interruption=2) as pool:
        with pytest.raises(sky.NodeLostError):
            dies_always() >> pool
        replaced(pool)
    assert counts(pool) == {"started": 1, "done": 0, "failed": 1, "retried": 2, "running": 0}
    assert summary_line(capsys.readouterr().err) == "tasks: 0 done, 1 failed, 2 retries"


def test_a_task_still_running_at_the_pools_exit_counts_as_failed(capsys: pytest.CaptureFixture[str]) -> None:
    with log_pool() as pool:
        future = sleep_for(30) > pool
        assert wait_until(lambda: pool.bus.tally.running == 1, timeout=10)
    with pytest.raises(sky.PoolClosedError):
        future.result(timeout=0)
    assert counts(pool) == {"started": 1, "done": 0, "failed": 1, "retried": 0, "running": 0}
    err = capsys.readouterr().err
    assert re.search(r"ERROR task sleep_for#\d+ failed on node \d .*: PoolClosedError", err), err
    assert summary_line(err) == "tasks: 0 done, 1 failed", err


def test_a_task_moved_off_a_node_a_resize_let_go_counts_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with log_pool() as pool:
        futures = [announce_then_sleep(str(tmp_path), 1.5) > pool for _ in range(2)]
        assert wait_until(lambda: len(list(tmp_path.iterdir())) == 2, timeout=10), "both on their nodes"
        pool.resize(1)  # node 1's task is queued again, for node 0
        assert [f.result(timeout=30) for f in futures] == [0, 0]
        in_pool = settled_counts(pool, {"started": 2, "done": 2, "failed": 0, "retried": 1, "running": 0})
    assert in_pool == {"started": 2, "done": 2, "failed": 0, "retried": 1, "running": 0}
    assert summary_line(capsys.readouterr().err) == "tasks: 2 done, 0 failed, 1 retry"


def test_a_console_fed_events_by_hand_counts_a_task_started_twice_once() -> None:
    stream = io.StringIO()
    console = Console("log", stream=stream)  # type: ignore[arg-type]
    for event in (
        ev.TaskStarted(task_id=3, name="train", node=0),
        ev.TaskRetried(task_id=3, name="train", node=0, attempt=1, reason="node lost"),
        ev.TaskStarted(task_id=3, name="train", node=1),
        ev.TaskCompleted(task_id=3, name="train", node=1, success=True, duration=0.5),
        ev.ClusterDestroyed(seconds=1.0),
    ):
        console.handle(event)
    assert summary_line(stream.getvalue()) == "tasks: 1 done, 0 failed, 1 retry", stream.getvalue()


def test_a_rerun_takes_the_earlier_start_back() -> None:
    tally = TaskTally()
    tally.start()
    tally.rerun()
    tally.start()
    assert (tally.started, tally.retried, tally.running) == (1, 1, 1)
    tally.finish(True)
    assert (tally.started, tally.done, tally.running) == (1, 1, 0)
