"""The collections on the SSH provider (two real OpenSSH hosts on loopback, see tests/ssh): the
same methods as on Local, and state shared across the hosts, through no port but SSH's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from collections_support import (
    ASYNC_SEEN,
    COUNTER_SEEN,
    DICT_SEEN,
    LOCK_SEEN,
    QUEUE_SEEN,
    SET_SEEN,
    async_methods,
    counter_methods,
    critical_section,
    dict_methods,
    get_n,
    increment_many,
    lock_methods,
    meet_at_barrier,
    put_all,
    queue_methods,
    read_counter,
    set_methods,
)
from ssh_hosts import SSHHosts, hosts_running, ssh_pool

import skyward as sky

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def ssh_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    with hosts_running(tmp_path_factory.mktemp("sshd"), 2) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def pool(ssh_hosts: SSHHosts) -> Iterator[sky.Pool]:
    compute = ssh_pool(ssh_hosts, nodes=2, worker=sky.Worker(concurrency=2))
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()


def test_every_method_works_on_ssh_nodes(pool: sky.Pool, name: str) -> None:
    assert pool.run(dict_methods(name), target=0) == DICT_SEEN
    assert pool.run(dict_methods(f"{name}-eventual", "eventual"), target=1) == DICT_SEEN
    assert pool.run(set_methods(name), target=1) == SET_SEEN
    assert pool.run(counter_methods(name), target=0) == COUNTER_SEEN
    assert pool.run(queue_methods(name), target=1) == QUEUE_SEEN
    assert pool.run(lock_methods(name), target=0) == LOCK_SEEN
    assert pool.run(async_methods(f"{name}-async"), target=1) == ASYNC_SEEN


def test_no_increment_is_lost_across_the_hosts(pool: sky.Pool, name: str) -> None:
    sky.gather(*(increment_many(name, 40) for _ in range(6))) >> pool
    assert pool.run(read_counter(name)) == 240


def test_a_barrier_gathers_both_hosts(pool: sky.Pool, name: str) -> None:
    seen = meet_at_barrier(name, 2) @ pool
    assert sorted(node for node, _, _ in seen) == [0, 1]
    assert all(arrived == 2 for _, _, arrived in seen)


def test_a_lock_excludes_across_the_hosts(pool: sky.Pool, name: str) -> None:
    assert max(sky.gather(*(critical_section(name, 4, 0.002) for _ in range(4))) >> pool) == 0


def test_a_queue_filled_on_one_host_is_read_in_order_on_the_other(pool: sky.Pool, name: str) -> None:
    pool.run(put_all(name, list(range(25))), target=0)
    assert pool.run(get_n(name, 25, 10), target=1) == (1, list(range(25)))

