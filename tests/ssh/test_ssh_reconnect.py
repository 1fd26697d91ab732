"""A dropped SSH link loses no work: the worker runs on under its relay on the node, and the client
comes back to it (same worker, its tasks' answers and output). Only a link that stays down past
the grace period (the lease `ttl`) loses the node: its task is retried on a reconnected worker, or
moves to another node when the host stays unreachable."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from link_cut import CuttableLink
from ssh_hosts import pid_alive, ssh_pool, start_hosts, wait_until, workers_of

import skyward as sky


@sky.function
def pid() -> int:
    return os.getpid()


@sky.function
def slow(seconds: float) -> tuple[int, int]:
    time.sleep(seconds)
    return sky.instance_info().node, os.getpid()


@sky.function
def chatty(seconds: float) -> int:
    print("before the cut", flush=True)
    time.sleep(seconds)
    print("after the cut", flush=True)
    return os.getpid()


WATCHED = (sky.NodeLost, sky.TaskRetried, sky.InstanceReplaced, sky.TaskStarted, sky.Log)


def watch(compute: sky.Compute) -> list[sky.Event]:
    events: list[sky.Event] = []
    for kind in WATCHED:
        compute.on(kind, events.append)
    return events


def count(events: list[sky.Event], kind: type) -> int:
    return sum(isinstance(e, kind) for e in events)


def test_a_cut_link_comes_back_to_the_same_worker_with_the_tasks_answer_and_output(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 1)
    try:
        with CuttableLink(hosts.servers[0], tmp_path) as link:
            compute = ssh_pool(hosts, provider=link.provider(hosts))
            events = watch(compute)
            with compute:
                worker = pid() >> compute
                future = chatty(4) > compute
                assert wait_until(lambda: any("before the cut" in getattr(e, "line", "") for e in events))
                logins = link.connections
                link.cut(5)  # the task finishes on the node while the link is down
                assert future.result(timeout=120) == worker  # its answer, from the worker that ran it
                assert link.connections > logins  # the client logged in again through the link
                assert pid() >> compute == worker  # and the pool goes on with that worker
            lines = [getattr(e, "line", "") for e in events]
            assert any("after the cut" in line for line in lines)  # printed while the link was down
            assert count(events, sky.NodeLost) == count(events, sky.TaskRetried) == 0
            assert count(events, sky.InstanceReplaced) == 0
        assert wait_until(lambda: not pid_alive(worker), timeout=10)
    finally:
        hosts.stop()


def test_a_link_silent_for_a_few_seconds_carries_on_without_a_new_login(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 1)
    try:
        with CuttableLink(hosts.servers[0], tmp_path) as link:
            compute = ssh_pool(hosts, provider=link.provider(hosts))
            events = watch(compute)
            with compute:
                worker = pid() >> compute
                future = chatty(2) > compute
                assert wait_until(lambda: any("before the cut" in getattr(e, "line", "") for e in events))
                logins = link.connections
                link.stall(4)  # nothing crosses, nothing closes: TCP holds it, SSH waits
                assert future.result(timeout=120) == worker
                assert link.connections == logins  # the same connection carried on
            assert any("after the cut" in getattr(e, "line", "") for e in events)
            assert count(events, sky.NodeLost) == count(events, sky.TaskRetried) == 0
    finally:
        hosts.stop()


def test_a_link_silent_past_its_keepalives_is_dropped_and_the_worker_reattached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyward.transport import ssh_connect

    # One keepalive a second, two unanswered: the silent connection is given up after ~3 s.
    monkeypatch.setattr(ssh_connect, "KEEPALIVE_INTERVAL", 1)
    monkeypatch.setattr(ssh_connect, "KEEPALIVE_COUNT", 2)
    hosts = start_hosts(tmp_path, 1)
    try:
        with CuttableLink(hosts.servers[0], tmp_path) as link:
            compute = ssh_pool(hosts, provider=link.provider(hosts))
            events = watch(compute)
            with compute:
                worker = pid() >> compute
                future = chatty(3) > compute
                assert wait_until(lambda: any("before the cut" in getattr(e, "line", "") for e in events))
                logins = link.connections
                link.stall()
                time.sleep(6)  # the silence outlasts the keepalives: the client gives the connection up
                link.flow()
                assert future.result(timeout=120) == worker  # from the worker that ran it
                assert link.connections > logins  # on a new login
                assert pid() >> compute == worker
            assert any("after the cut" in getattr(e, "line", "") for e in events)
            assert count(events, sky.NodeLost) == count(events, sky.TaskRetried) == 0
    finally:
        hosts.stop()


def test_a_link_down_past_its_grace_period_loses_the_node_and_retries_its_task(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 1)
    try:
        with CuttableLink(hosts.servers[0], tmp_path) as link:
            compute = ssh_pool(hosts, provider=link.provider(hosts), ttl=3)  # the grace period
            events = watch(compute)
            with compute:
                old = pid() >> compute
                future = slow(2) > compute
                assert wait_until(lambda: count(events, sky.TaskStarted) == 2)
                link.cut()
                assert wait_until(lambda: count(events, sky.NodeLost) == 1, timeout=60)
                link.restore()
                node, new = future.result(timeout=120)
                assert node == 0 and new != old  # run again, on a new worker
                assert pid() >> compute == new
            assert count(events, sky.NodeLost) == 1 and count(events, sky.TaskRetried) == 1
            assert wait_until(lambda: not pid_alive(old), timeout=30)  # ended on the node
    finally:
        hosts.stop()


def test_a_host_that_stays_unreachable_loses_its_node_and_its_task_moves(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 2)  # servers of its own: this test stops one
    try:
        compute = ssh_pool(hosts, ssh_timeout=2, ssh_retry_interval=1, ttl=2)
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
        # the lost node's relay ended its worker once the grace period passed
        assert wait_until(lambda: workers_of(hosts.servers[1].home) == [], timeout=10)
        assert workers_of(hosts.servers[0].home) == []
    finally:
        hosts.stop()


def test_tasks_fail_instead_of_waiting_for_ever_once_no_node_is_left(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 1)  # a server of its own: this test stops it
    try:
        compute = ssh_pool(hosts, ssh_timeout=2, ssh_retry_interval=0.5, ttl=2)
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


def test_a_host_that_comes_back_with_another_host_key_is_not_reattached(tmp_path: Path) -> None:
    hosts = start_hosts(tmp_path, 2)
    try:
        with CuttableLink(hosts.servers[0], tmp_path) as link:
            compute = ssh_pool(hosts, provider=link.provider(hosts), ssh_timeout=2, ssh_retry_interval=0.5)
            events = watch(compute)
            with compute:
                worker = pid() >> compute
                future = slow(30) > compute
                assert wait_until(lambda: count(events, sky.TaskStarted) == 2)
                link.cut()
                link.restore(to=hosts.servers[1])  # someone else answers at the node's address
                with pytest.raises(sky.NodeLostError):
                    future.result(timeout=60)  # within the default grace of 600 s: no waiting it out
            lost = [e for e in events if isinstance(e, sky.NodeLost)]
            assert lost and "host key" in lost[0].reason
            assert pid_alive(worker)  # the worker was not reached: its keeper waits out the grace
    finally:
        hosts.stop()
