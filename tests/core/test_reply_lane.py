"""The reply lane: a lone `f() >> pool` reads its answer on its own thread, with the same guarantees
as any task (output first, time limits, retries on a lost node, a clean shutdown)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from core_support import assert_pool_works, busy_loop, wait_until, write_pid_then_sleep

import skyward as sky
from skyward.transport import lane as lanes
from skyward.wire import Kind, encode

pytestmark = pytest.mark.timeout(60)


@sky.function
def echo(value: int) -> int:
    return value


@sky.function
def shout(text: str) -> str:
    print(text)
    return text.upper()


@sky.function
def fails() -> None:
    raise ValueError("no such thing")


def completions_by_thread(compute: sky.Pool) -> list[str]:
    names: list[str] = []
    compute.on(sky.TaskCompleted, lambda event: names.append(threading.current_thread().name))
    return names


def greeted_lane() -> tuple[lanes.ReplyLane, int]:
    """A lane over a fresh pipe whose "worker" end (returned) has written the greeting."""
    read, write = os.pipe()
    os.write(write, lanes.GREETING)
    lane = lanes.open_lane(read)
    assert lane is not None
    return lane, write


def kill_when_started(path: Path, killed: list[int]) -> threading.Thread:
    """SIGKILL the worker once the task has written its pid to `path` (the pid goes to `killed`)."""

    def kill() -> None:
        assert wait_until(path.exists, timeout=10)
        killed.append(int(path.read_text()))
        os.kill(killed[0], signal.SIGKILL)

    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_every_local_node_has_a_reply_lane(fresh_pool) -> None:
    compute = fresh_pool(2)
    assert all(node.lane is not None for node in compute._scheduler.handles())


def test_a_lone_call_is_answered_on_the_callers_thread(fresh_pool) -> None:
    compute = fresh_pool(1)
    threads = completions_by_thread(compute)
    assert [echo(i) >> compute for i in range(5)] == [0, 1, 2, 3, 4]
    assert threads == [threading.current_thread().name] * 5  # the loop never read these answers


def test_each_task_reports_started_then_completed_on_one_thread(fresh_pool) -> None:
    """Whatever path a task takes (`>>` on the lane, a lone `>` written from the caller's thread,
    a `map` placed by the loop), its TaskStarted comes first and on the thread of its TaskCompleted."""
    compute = fresh_pool(2)
    seen: dict[int, list[tuple[str, str]]] = {}
    lock = threading.Lock()

    def record(event: sky.TaskStarted | sky.TaskCompleted) -> None:
        with lock:
            kind = "started" if isinstance(event, sky.TaskStarted) else "completed"
            seen.setdefault(event.task_id, []).append((kind, threading.current_thread().name))

    compute.on(sky.TaskStarted, record)
    compute.on(sky.TaskCompleted, record)
    for i in range(30):
        assert (echo(i) > compute).result() == i
        assert echo(i) >> compute == i
    assert compute.map(echo, range(30)) == list(range(30))
    assert wait_until(lambda: len(seen) == 90 and all(len(e) == 2 for e in seen.values()), timeout=5)
    for events in seen.values():
        (first, started_on), (second, completed_on) = events
        assert (first, second) == ("started", "completed")
        assert started_on == completed_on


def test_a_remote_error_on_the_lane_is_raised_by_name(fresh_pool) -> None:
    compute = fresh_pool(1)
    with pytest.raises(ValueError, match="no such thing"):
        fails() >> compute
    assert echo(7) >> compute == 7


def test_what_a_call_prints_arrives_before_its_answer(fresh_pool) -> None:
    compute = fresh_pool(1)
    lines: list[str] = []
    compute.on(sky.Log, lambda event: lines.append(event.line))
    assert shout("hello") >> compute == "HELLO"
    assert lines == ["hello"]  # already there when the answer is: it came on the main channel after it
    assert echo(1) >> compute == 1


def test_a_time_limit_passing_during_a_lane_call_raises_and_the_node_is_reused(fresh_pool) -> None:
    compute = fresh_pool(1)
    threads = completions_by_thread(compute)
    began = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 0.5s"):
        busy_loop(30.0).with_timeout(0.5) >> compute
    assert time.monotonic() - began < 10
    # The cancelled task's answer was read by the loop, which then gave the lane back.
    assert wait_until(lambda: echo(2) >> compute == 2 and threads[-1] == threading.current_thread().name)


def test_a_worker_killed_during_a_lane_call_is_replaced_and_the_call_returns(
    fresh_pool, tmp_path: Path
) -> None:
    compute = fresh_pool(1)
    marker, killed = tmp_path / "pid", []
    killer = kill_when_started(marker, killed)
    answered_by = write_pid_then_sleep(str(marker), 2.0) >> compute
    killer.join()
    assert answered_by != killed[0]  # the retry ran on the replacement worker
    assert_pool_works(compute)
    assert echo(3) >> compute == 3


def test_without_retries_a_lane_call_on_a_killed_worker_fails_with_node_lost(
    fresh_pool, tmp_path: Path
) -> None:
    compute = fresh_pool(1, options=sky.Options(retry_on_interruption=0))
    marker, killed = tmp_path / "pid", []
    killer = kill_when_started(marker, killed)
    with pytest.raises(sky.NodeLostError):
        write_pid_then_sleep(str(marker), 5.0) >> compute
    killer.join()
    assert wait_until(lambda: compute.current_nodes() == 1, timeout=15)
    assert echo(4) >> compute == 4


@pytest.mark.usefixtures("interruptible")
def test_an_interrupt_during_a_lane_call_leaves_the_pool_working(fresh_pool) -> None:
    compute = fresh_pool(1)
    threads = completions_by_thread(compute)
    # To the main thread, as Ctrl-C reaches it: its blocking read returns at once to raise it.
    timer = threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        busy_loop(1.0) >> compute
    timer.join()
    # The loop took the call over: it reads the answer, then the lane serves the next call.
    assert wait_until(lambda: len(threads) == 1, timeout=10)
    assert threads[0] != threading.current_thread().name
    assert wait_until(lambda: echo(5) >> compute == 5 and threads[-1] == threading.current_thread().name)


def test_calls_from_many_threads_each_get_their_own_answer(fresh_pool) -> None:
    compute = fresh_pool(2)
    results: dict[int, list[int]] = {}

    def caller(offset: int) -> None:
        results[offset] = [echo(offset + i) >> compute for i in range(150)]

    threads = [threading.Thread(target=caller, args=(k * 1000,)) for k in range(4)]
    for thread in threads:
        thread.start()
    mapped = compute.map(echo, range(300))
    for thread in threads:
        thread.join(timeout=30)
    assert mapped == list(range(300))
    assert results == {k * 1000: [k * 1000 + i for i in range(150)] for k in range(4)}


def test_stopping_the_pool_ends_a_lane_call_in_another_thread(tmp_path: Path) -> None:
    compute = sky.Compute(provider=sky.Local(), nodes=1, console=False, logging=False)
    compute.start()
    outcome: list[BaseException | int] = []

    def caller() -> None:
        try:
            outcome.append(busy_loop(3.0) >> compute)
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcome.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    time.sleep(0.3)
    compute.stop()
    thread.join(timeout=20)
    assert not thread.is_alive(), "the call outlived its pool"
    assert len(outcome) == 1
    assert isinstance(outcome[0], (sky.PoolClosedError, int))


def test_a_descriptor_without_the_greeting_is_not_used_as_a_lane() -> None:
    read, write = os.pipe()
    os.write(write, b"something else")
    assert lanes.open_lane(read) is None
    with pytest.raises(OSError):
        os.fstat(read)  # closed, not leaked
    os.close(write)


def test_a_descriptor_with_the_greeting_becomes_a_lane() -> None:
    lane, write = greeted_lane()
    assert lane.try_acquire()
    assert not lane.try_acquire()  # one call at a time
    os.close(write)
    assert lane.read() is None and lane.ended  # the worker's end closed
    lane.release()
    lane.close()


def write_later(fd: int, data: bytes, delay: float) -> threading.Timer:
    timer = threading.Timer(delay, os.write, (fd, data))
    timer.start()
    return timer


def test_an_answer_that_comes_after_the_brief_poll_is_still_read(monkeypatch) -> None:
    monkeypatch.setattr(lanes, "SPIN", 0.001)  # the caller polls for 1 ms, then sleeps
    lane, write = greeted_lane()
    timer = write_later(write, b"".join(encode(Kind.RESULT, 7, "late")), 0.2)
    frame = lane.read(timeout=10)
    timer.join()
    assert frame is not None and (frame.id, frame.payload) == (7, "late")
    os.close(write)
    lane.close()


def test_an_answer_that_comes_during_the_brief_poll_is_read_without_a_sleep(monkeypatch) -> None:
    monkeypatch.setattr(lanes, "SPIN", 5.0)  # long enough that the answer lands while polling
    lane, write = greeted_lane()
    slept: list[float] = []
    real_poll = lane._poll

    class Watched:
        def poll(self, timeout: float | None = None) -> list[tuple[int, int]]:
            if timeout:
                slept.append(timeout)  # a blocking poll: the caller went to sleep
            return real_poll.poll(timeout)

    lane._poll = Watched()  # type: ignore[assignment]
    timer = write_later(write, b"".join(encode(Kind.RESULT, 8, "soon")), 0.05)
    frame = lane.read(timeout=10)
    timer.join()
    assert frame is not None and frame.payload == "soon"
    assert slept == []
    os.close(write)
    lane.close()


def test_the_brief_poll_does_not_stretch_a_time_limit(monkeypatch) -> None:
    monkeypatch.setattr(lanes, "SPIN", 0.001)
    lane, write = greeted_lane()
    began = time.monotonic()
    assert lane.read(timeout=0.2) is None  # nothing came
    assert time.monotonic() - began < 5
    os.close(write)
    lane.close()


def test_a_single_cpu_caller_never_polls_without_sleeping() -> None:
    code = "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); " \
        "from skyward.transport import lane; print(lane.SPIN)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert float(out.stdout) == 0.0


def test_without_cpu_affinity_the_cpu_count_decides(monkeypatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # as on macOS
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert lanes._usable_cpus() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert lanes._usable_cpus() == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert lanes._usable_cpus() == 8
