"""No worker outlives its pool, however the pool ends; no task is dropped without an error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from core_support import local_pool, pid_alive, wait_until, worker_pid

import skyward as sky

pytestmark = pytest.mark.timeout(60)


@sky.function
def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@sky.function
def task_and_parent_pid() -> tuple[int, int]:
    return os.getpid(), os.getppid()


def alive(pids: list[int]) -> list[int]:
    return [p for p in pids if pid_alive(p)]


def test_workers_are_gone_after_a_normal_exit() -> None:
    with local_pool(2) as compute:
        pids = worker_pid() @ compute
        assert alive(pids) == pids
    assert alive(pids) == []


def test_workers_are_gone_after_an_exception_in_the_body() -> None:
    with pytest.raises(RuntimeError, match="user error"), local_pool(2) as compute:
        pids = worker_pid() @ compute
        raise RuntimeError("user error")
    assert alive(pids) == []


def test_workers_are_gone_after_keyboard_interrupt_in_the_body() -> None:
    with pytest.raises(KeyboardInterrupt), local_pool(2) as compute:
        pids = worker_pid() @ compute
        raise KeyboardInterrupt
    assert alive(pids) == []


def test_workers_are_gone_after_exit_with_a_task_still_running() -> None:
    with local_pool(1) as compute:
        pids = worker_pid() @ compute
        future = sleep_for(30) > compute
    assert alive(pids) == []
    with pytest.raises(sky.PoolClosedError, match=r"sleep_for\(\) was interrupted"):
        future.result(timeout=0)


def test_process_executor_subprocesses_are_gone_after_exit() -> None:
    with local_pool(2, worker=sky.Worker(executor="process")) as compute:
        subprocesses, workers = zip(*(task_and_parent_pid() @ compute), strict=True)
        assert set(workers).isdisjoint(subprocesses)
    assert alive([*workers, *subprocesses]) == []


def test_stopped_pool_of_a_session_leaves_no_workers() -> None:
    with sky.Session() as session:
        compute = session.compute(provider=sky.Local(), nodes=2, console=False, logging=False)
        pids = worker_pid() @ compute
    assert alive(pids) == []


def test_queued_tasks_fail_with_pool_closed_error_at_shutdown() -> None:
    with local_pool(1) as compute:
        futures = [sleep_for(5) > compute for _ in range(4)]
        time.sleep(0.2)  # the first one is running, the rest wait for its slot
    assert all(f.done() for f in futures), "a task was left pending"
    errors = [f.exception(timeout=0) for f in futures]
    assert all(isinstance(e, sky.PoolClosedError) for e in errors), errors
    assert "was interrupted" in str(errors[0])
    assert all("was not run" in str(e) for e in errors[1:])


def test_dispatch_after_exit_raises_pool_closed_error() -> None:
    with local_pool(1) as compute:
        pass
    expected = r"dispatch inside its `with sky.Compute\(...\) as pool:` block"
    with pytest.raises(sky.PoolClosedError, match=expected):
        worker_pid() >> compute
    with pytest.raises(sky.PoolClosedError):
        worker_pid() @ compute
    with pytest.raises(sky.PoolClosedError):
        _ = worker_pid() > compute
    with pytest.raises(sky.PoolClosedError):
        compute.map(abs, [1])


def test_a_stopped_pool_cannot_be_started_again() -> None:
    with local_pool(1) as compute:
        pass
    with pytest.raises(sky.PoolClosedError, match="create a new sky.Compute"):
        compute.start()


SCRIPT = textwrap.dedent(
    """
    import faulthandler, os, signal, sys, time
    import skyward as sky

    # Ctrl-C raises KeyboardInterrupt even where this script inherits an ignored SIGINT (a job
    # started with `&` by a non-interactive shell, as CI runners do).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for stacks on a hang

    @sky.function
    def pid():
        return os.getpid()

    @sky.function
    def sleep_for(seconds):
        time.sleep(seconds)

    with sky.Compute(provider=sky.Local(), nodes=2, console=False, logging=False) as pool:
        print(*(pid() @ pool), flush=True)
        print("RUNNING", flush=True)
        sleep_for(60) >> pool
    print("finished normally", flush=True)
    """
)


def run_until_running(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    script = tmp_path / "pool_script.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert proc.stdout.readline().strip() == "RUNNING", proc.stderr.read() if proc.stderr else ""
    time.sleep(0.3)  # let the long task reach a worker
    return proc, pids


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signalled_script_exits_and_leaves_no_workers(tmp_path: Path, signum: int) -> None:
    proc, pids = run_until_running(tmp_path)
    try:
        assert len(pids) == 2 and alive(pids) == pids
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the script did not exit on {signal.Signals(signum).name}; its threads:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "finished normally" not in out
    gone = wait_until(lambda: alive(pids) == [], timeout=5)
    assert gone, f"workers outlived the script: {alive(pids)}\n{err}"


def test_map_after_exit_raises_pool_closed_even_for_no_items() -> None:
    with sky.Compute(provider=sky.Local(), nodes=1, console=False) as pool:
        pass
    with pytest.raises(sky.PoolClosedError):
        pool.map(abs, [])


@sky.function
def start_a_sleeping_child() -> int:
    import subprocess

    return subprocess.Popen(["sleep", "300"]).pid


def test_a_subprocess_started_by_a_task_ends_with_the_pool() -> None:
    with sky.Compute(provider=sky.Local(), nodes=1, console=False) as pool:
        child = start_a_sleeping_child() >> pool
        assert pid_alive(child)
    wait_until(lambda: not pid_alive(child), timeout=10)
