"""A pool on two SSH hosts behaves like any pool: operators, sharding, errors, timeouts, logs.

One two-node pool (node i on host i) serves the module; tests that damage a pool make their own.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest
from ssh_hosts import SSHHosts, pid_alive, ssh_pool, wait_until, workers_of

import skyward as sky


@sky.function
def add(a: int, b: int) -> int:
    return a + b


@sky.function
def whoami() -> dict[str, Any]:
    info = sky.instance_info()
    return {
        "node": info.node, "total": info.total_nodes, "ip": info.ip, "private_ip": info.private_ip,
        "head_addr": info.head_addr, "provider": info.provider, "ssh_port": info.ssh_port,
        "home": os.environ["HOME"], "cwd": os.getcwd(), "python": sys.executable, "pid": os.getpid(),
    }


@sky.function
def my_shard(items: list[int]) -> list[int]:
    return sky.shard(items)


@sky.function
def fail(message: str) -> None:
    raise KeyError(message)


@sky.function
def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@sky.function
def shout(text: str) -> str:
    print(text)
    print(f"{text} on stderr", file=sys.stderr)
    return text


@sky.function
def big(n: int) -> Any:
    import numpy as np

    return np.arange(n, dtype=np.float64)


@sky.function
def total(array: Any) -> float:
    return float(array.sum())


# -- placement and identity --------------------------------------------------------------------------


def test_each_node_runs_on_its_own_host(pool: sky.Pool, ssh_hosts: SSHHosts) -> None:
    seen = whoami() @ pool
    assert [s["node"] for s in seen] == [0, 1]
    for server, s in zip(ssh_hosts.servers, seen, strict=True):
        assert s["home"] == str(server.home)
        assert s["ip"] == s["private_ip"] == server.address
        assert s["ssh_port"] == server.port
        assert s["provider"] == "ssh" and s["total"] == 2
        assert s["head_addr"] == ssh_hosts.servers[0].address
        # the worker runs in its node folder, from the venv the bootstrap built there
        assert s["cwd"] == f"{server.home}/.skyward/pools/{pool.name}/node-{s['node']}"
        assert s["python"] == f"{s['cwd']}/venv/bin/python"


def test_nodes_default_to_one_per_host(pool: sky.Pool) -> None:
    assert pool.current_nodes() == 2


# -- operators ---------------------------------------------------------------------------------------


def test_rshift_returns_the_value(pool: sky.Pool) -> None:
    assert add(2, 3) >> pool == 5


def test_rshift_alternates_between_the_hosts(pool: sky.Pool) -> None:
    homes = {(whoami() >> pool)["home"] for _ in range(4)}
    assert len(homes) == 2


def test_broadcast_runs_once_per_host_in_node_order(pool: sky.Pool) -> None:
    assert [s["node"] for s in whoami() @ pool] == [0, 1]


def test_and_group_and_gather_keep_call_order(pool: sky.Pool) -> None:
    assert (add(1, 2) & add(3, 4) & add(5, 6)) >> pool == (3, 7, 11)
    assert sky.gather(*(add(i, i) for i in range(6))) >> pool == tuple(2 * i for i in range(6))
    unordered = sky.gather(*(add(i, 1) for i in range(4)), stream=True, ordered=False) >> pool
    assert sorted(unordered) == [1, 2, 3, 4]


def test_gt_returns_a_future(pool: sky.Pool) -> None:
    future = add(20, 22) > pool
    assert future.result(timeout=30) == 42


def test_map_keeps_input_order(pool: sky.Pool) -> None:
    assert pool.map(lambda x: x * x, range(20)) == [x * x for x in range(20)]


def test_shard_splits_the_data_across_the_two_hosts(pool: sky.Pool) -> None:
    items = list(range(11))
    shards = my_shard(items) @ pool
    assert len(shards) == 2
    assert sorted(shards[0] + shards[1]) == items
    assert not set(shards[0]) & set(shards[1])


def test_a_handler_run_while_a_task_is_placed_from_the_callers_thread_may_dispatch_with_gt(
    pool: sky.Pool,
) -> None:
    """A lone `>>` is placed from the caller's thread while the loop waits (`LoopThread.run_here`),
    and its TaskStarted handlers run there: for them that thread is the loop, so `>` is queued on
    it and `>>` is refused with the fix, as on the loop thread, rather than waiting for ever."""
    outcomes: list[Any] = []

    def handler(event: sky.TaskStarted) -> None:
        if outcomes:
            return
        outcomes.append(add(20, 22) > pool)
        try:
            add(1, 1) >> pool
        except RuntimeError as exc:
            outcomes.append(str(exc))

    stop = pool.on(sky.TaskStarted, handler)
    try:
        assert add(1, 2) >> pool == 3
    finally:
        stop()
    assert outcomes[0].result(timeout=30) == 42
    assert "own event loop" in outcomes[1]


def test_large_arrays_cross_the_ssh_channel_both_ways(pool: sky.Pool) -> None:
    import numpy as np

    array = big(2_000_000) >> pool  # 16 MB back
    assert array.shape == (2_000_000,) and array[-1] == 1_999_999
    assert total(np.ones(3_000_000)) >> pool == 3_000_000.0  # 24 MB out


# -- errors, timeouts, output ------------------------------------------------------------------------


def test_remote_exception_keeps_its_type_and_remote_traceback(pool: sky.Pool) -> None:
    with pytest.raises(KeyError, match="missing") as caught:
        fail("missing") >> pool
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "Remote traceback" in notes and "fail" in notes


def test_timeout_raises_and_the_stuck_worker_is_killed_and_replaced(pool: sky.Pool) -> None:
    before = [s["pid"] for s in whoami() @ pool]
    with pytest.raises(TimeoutError, match="did not finish within"):
        sleep_for(30).with_timeout(1) >> pool
    # time.sleep cannot be interrupted: after a grace period the client replaces that worker,
    # killing its process group over SSH, and later tasks run on both hosts again.
    assert wait_until(lambda: sum(pid_alive(p) for p in before) == 1, timeout=20)
    assert wait_until(lambda: pool.current_nodes() == 2, timeout=20)
    after = [s["pid"] for s in whoami() @ pool]
    assert len(set(after) - set(before)) == 1


def test_output_of_remote_tasks_reaches_the_client_as_log_events(pool: sky.Pool) -> None:
    lines: list[sky.Log] = []
    unsubscribe = pool.on(sky.Log, lines.append)
    try:
        assert shout("hello from ssh") >> pool == "hello from ssh"
        assert wait_until(lambda: len(lines) >= 2, timeout=5)
    finally:
        unsubscribe()
    assert {(line.stream, line.line) for line in lines} >= {
        ("stdout", "hello from ssh"), ("stderr", "hello from ssh on stderr")
    }


# -- what is left on the hosts -----------------------------------------------------------------------


def test_a_pool_leaves_no_worker_and_no_files_on_the_hosts(ssh_hosts: SSHHosts) -> None:
    with ssh_pool(ssh_hosts) as compute:
        pids = [s["pid"] for s in whoami() @ compute]
        for server, pid in zip(ssh_hosts.servers, pids, strict=True):
            assert pid in workers_of(server.home)
    assert wait_until(lambda: not any(pid_alive(p) for p in pids), timeout=10)
    for server, pid in zip(ssh_hosts.servers, pids, strict=True):
        assert pid not in workers_of(server.home)
        assert not (server.home / ".skyward" / "pools" / compute.name).exists()
