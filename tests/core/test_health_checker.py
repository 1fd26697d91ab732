"""`Options(health_checker=sky.HealthChecker(...))`: a node that keeps failing its check is replaced
by a new one, and the task it was running is retried there with the right result."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import cloudpickle
import pytest
from core_support import node_index, pid_alive, wait_until, write_pid_then_sleep

import skyward as sky
from skyward.errors import ConfigurationError

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.timeout(60)


def healthy_unless_named(path: str) -> Callable[[], bool]:
    """A check that fails in the worker process whose pid is written in `path`, and only there."""

    def check() -> bool:
        try:
            return Path(path).read_text() != str(os.getpid())
        except FileNotFoundError:
            return True

    return check


def test_a_node_failing_its_health_check_is_replaced_and_its_task_retried(fresh_pool, tmp_path: Path) -> None:
    sick = tmp_path / "sick"
    checker = sky.HealthChecker(check=healthy_unless_named(str(sick)), interval=0.2, failures=2, timeout=5)
    compute = fresh_pool(2, options=sky.Options(health_checker=checker, console=False, logging=False))
    replaced: list[sky.InstanceReplaced] = []
    retried: list[sky.TaskRetried] = []
    lost: list[sky.NodeLost] = []
    compute.on(sky.InstanceReplaced, replaced.append)
    compute.on(sky.TaskRetried, retried.append)
    compute.on(sky.NodeLost, lost.append)
    marker = tmp_path / "pid"
    future = compute.run_async(write_pid_then_sleep(str(marker), 1.5), target=1)
    assert wait_until(marker.exists, timeout=10), "the task never started"
    first = int(marker.read_text())
    sick.write_text(str(first))  # node 1's worker fails every check from now on
    finished_on = future.result(timeout=30)
    assert finished_on != first, "the task's result came from the node that failed its checks"
    assert [e.node for e in replaced] == [1]
    assert [(e.node, e.attempt) for e in retried] == [(1, 1)]
    assert [e.node for e in lost] == [1] and "health check" in lost[0].reason
    assert wait_until(lambda: not pid_alive(first), timeout=10)
    assert sorted(node_index() @ compute) == [0, 1]


def test_healthy_nodes_are_left_alone(fresh_pool) -> None:
    checker = sky.HealthChecker(check=lambda: True, interval=0.1, failures=1)
    compute = fresh_pool(2, options=sky.Options(health_checker=checker, console=False, logging=False))
    replaced: list[sky.InstanceReplaced] = []
    compute.on(sky.InstanceReplaced, replaced.append)
    time.sleep(0.6)
    assert sorted(node_index() @ compute) == [0, 1]
    assert replaced == []


def test_a_health_checker_must_be_a_health_checker() -> None:
    with pytest.raises(ConfigurationError, match="sky.HealthChecker"):
        sky.Options(health_checker=lambda: True)
    with pytest.raises(ConfigurationError, match="failures"):
        sky.HealthChecker(check=lambda: True, failures=0)
