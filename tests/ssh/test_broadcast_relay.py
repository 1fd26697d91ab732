"""A broadcast's large argument leaves the client once; the nodes relay it among themselves.

Four real OpenSSH hosts on loopback, one node each (client/relay.py, transport/blob_relay.py):
the client sends one copy to node 0, each node forwards it to the next over SSH with a key made
for that relay, and every worker adopts it from its node folder. A node whose relay fails is sent
the argument by the client, and the nodes after it are served by a node that holds it.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ssh_hosts import SSHHosts, cmdline, hosts_running, processes_of, ssh_pool, wait_until

import skyward as sky
from skyward.client.relay import RELAY_MIN

pytestmark = pytest.mark.timeout(300)

NODES = 4


@pytest.fixture(scope="module")
def four_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHHosts]:
    with hosts_running(tmp_path_factory.mktemp("relay-sshd"), NODES, leak_check=True) as hosts:
        yield hosts


@pytest.fixture(scope="module")
def pool(four_hosts: SSHHosts) -> Iterator[sky.Pool]:
    compute = ssh_pool(four_hosts)
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()


@sky.function
def digest(data: np.ndarray) -> tuple[str, Any]:
    """What this worker got, and how it came: sent by the client or adopted from the node folder."""
    from skyward.worker import blobs

    return hashlib.blake2b(data.tobytes()).hexdigest(), blobs.stats()


@sky.function
def node_folder() -> str:
    return os.getcwd()


def _argument(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 255, RELAY_MIN + (1 << 20), dtype=np.uint8)


def _relay_keys(hosts: SSHHosts) -> list[str]:
    found = []
    for server in hosts.servers:
        path = server.home / ".ssh" / "authorized_keys"
        if path.exists():
            found += [line for line in path.read_text().splitlines() if "skyward-relay-" in line]
    return found


def test_every_node_gets_identical_bytes_relayed_by_the_nodes(pool: sky.Pool, four_hosts: SSHHosts) -> None:
    data = _argument(1)
    answers = digest(data) @ pool
    assert [d for d, _ in answers] == [hashlib.blake2b(data.tobytes()).hexdigest()] * NODES
    assert [(s.sent, s.adopted) for _, s in answers] == [(0, 1)] * NODES  # no worker was sent it


def test_a_relayed_argument_is_not_sent_again_to_nodes_that_hold_it(pool: sky.Pool) -> None:
    data = _argument(2)
    first = digest(data) @ pool
    again = digest(data) @ pool
    assert [d for d, _ in again] == [d for d, _ in first]
    assert [(s.sent, s.adopted) for _, s in again] == [(s.sent, s.adopted) for _, s in first]


def test_the_relay_leaves_no_key_and_no_file_on_the_nodes(pool: sky.Pool, four_hosts: SSHHosts) -> None:
    digest(_argument(3)) @ pool
    assert _relay_keys(four_hosts) == []
    folders = node_folder() @ pool
    assert [os.listdir(Path(f) / ".skyward-blobs") for f in folders] == [[]] * NODES


def test_a_node_whose_relay_fails_is_served_by_the_client_and_the_rest_by_a_node(pool: sky.Pool) -> None:
    folders = node_folder() @ pool
    blocked = Path(folders[1]) / ".skyward-blobs"
    if blocked.is_dir():
        blocked.rmdir()
    blocked.write_text("a file where node 1's relay writes: its relay fails")
    before = [s for _, s in digest(np.zeros(1)) @ pool]
    try:
        data = _argument(4)
        answers = digest(data) @ pool
    finally:
        blocked.unlink()
    assert [d for d, _ in answers] == [hashlib.blake2b(data.tobytes()).hexdigest()] * NODES
    came = [(s.sent - b.sent, s.adopted - b.adopted) for (_, s), b in zip(answers, before, strict=True)]
    assert came == [(0, 1), (1, 0), (0, 1), (0, 1)]  # node 1 from the client, 2 and 3 from node 0


def test_a_node_killed_mid_relay_is_served_by_the_client_and_the_nodes_after_it_by_a_node(
    pool: sky.Pool, four_hosts: SSHHosts
) -> None:
    folders = node_folder() @ pool
    partial = Path(folders[1]) / ".skyward-blobs"
    before = [s for _, s in digest(np.zeros(1)) @ pool]
    data = np.random.default_rng(5).integers(0, 255, 8 * RELAY_MIN, dtype=np.uint8)
    with concurrent.futures.ThreadPoolExecutor(1) as running:
        answered = running.submit(lambda: digest(data) @ pool)
        # Node 1's relay has written part of the argument, and forwarded it to node 2: end it there.
        assert wait_until(lambda: any(p.stat().st_size > 0 for p in partial.glob("*.part")), timeout=60)
        relays = [pid for pid in processes_of(four_hosts.servers[1].home) if "blob_relay" in cmdline(pid)]
        for pid in relays:
            os.kill(pid, signal.SIGKILL)
        answers = answered.result(timeout=240)
    assert relays
    assert [d for d, _ in answers] == [hashlib.blake2b(data.tobytes()).hexdigest()] * NODES
    came = [(s.sent - b.sent, s.adopted - b.adopted) for (_, s), b in zip(answers, before, strict=True)]
    assert came == [(0, 1), (1, 0), (0, 1), (0, 1)]
