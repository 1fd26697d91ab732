"""A dropped SSH connection loses the node: its task is retried on a reconnected worker, or moves
to another node when the host stays unreachable for `ssh_timeout`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from ssh_hosts import SSHHosts, cmdline, parent_pid, pid_alive, ssh_pool, start_hosts, wait_until, workers_of

import skyward as sky


@sky.function
def pid() -> int:
    return os.getpid()


@sky.function
def slow(seconds: float) -> tuple[int, int]:
    time.sleep(seconds)
    return sky.instance_info().node, os.getpid()


def test_a_killed_connection_retries_the_task_on_a_reconnected_worker(ssh_hosts: SSHHosts) -> None:
    compute = ssh_pool(ssh_hosts, servers=[1])
    events: list[sky.Event] = []
    watched = (sky.NodeLost, sky.TaskRetried, sky.InstanceReplaced, sky.BootstrapRequested, sky.TaskStarted)
    for kind in watched:
        compute.on(kind, events.append)
    with compute:
        old = pid() >> compute
        session = parent_pid(old)  # the sshd process serving this node's connection
        assert "sshd" in cmdline(session)
        future = slow(2) > compute
        assert wait_until(lambda: sum(isinstance(e, sky.TaskStarted) for e in events) == 2)
        os.kill(session, signal.SIGKILL)  # the connection is reset mid-task
        node, new = future.result(timeout=60)
        assert new != old and node == 0
        assert wait_until(lambda: not pid_alive(old), timeout=10)  # the old worker is gone
        assert pid() >> compute == new  # and the pool goes on with the new one
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("NodeLost") == 1 and kinds.count("TaskRetried") == 1
    assert kinds.count("InstanceReplaced") == 1
    assert kinds.count("BootstrapRequested") == 1  # the reconnect reused the node's venv
    assert not pid_alive(new)


def test_a_host_that_stays_unreachable_loses_its_node_and_its_task_moves(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 2)  # servers of its own: this test stops one
    try:
        compute = ssh_pool(hosts, ssh_timeout=2, ssh_retry_interval=1)
        errors: list[sky.Error] = []
        compute.on(sky.Error, errors.append)
        with compute:
            first, second = slow(1.5) > compute, slow(1.5) > compute  # one per node
            time.sleep(0.5)
            hosts.servers[1].stop()  # sshd and its connections gone for good
            assert first.result(timeout=60)[0] == 0
            assert second.result(timeout=60)[0] == 0  # requeued onto the node that is left
            assert wait_until(lambda: any("could not be replaced" in e.message for e in errors), timeout=30)
            assert compute.current_nodes() == 1
            assert (slow(0) >> compute)[0] == 0
        # the lost node's worker saw its stdin close with the connection and exited
        assert wait_until(lambda: workers_of(hosts.servers[1].home) == [], timeout=10)
        assert workers_of(hosts.servers[0].home) == []
    finally:
        hosts.stop()


def test_tasks_fail_instead_of_waiting_for_ever_once_no_node_is_left(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 1)  # a server of its own: this test stops it
    try:
        compute = ssh_pool(hosts, ssh_timeout=2, ssh_retry_interval=0.5)
        with compute:
            running = slow(1.5) > compute
            time.sleep(0.5)
            hosts.servers[0].stop()  # the only host, gone for good
            with pytest.raises(sky.NodeLostError, match="no node of .* is left .*could not be replaced"):
                running.result(timeout=60)
            with pytest.raises(sky.NodeLostError, match="no node of .* is left"):
                (slow(0) > compute).result(timeout=10)  # a task sent afterwards fails at once too
    finally:
        hosts.stop()
