"""Every node of an SSH pool bootstraps at the same time as the others, not after them (the cold
bootstrap's figures are in benchmarks/case_bootstrap.py; no timing is asserted here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from ssh_hosts import SSHHosts, ssh_pool

import skyward as sky


def test_every_node_starts_its_bootstrap_before_any_node_is_ready(ssh_hosts: SSHHosts) -> None:
    events: list[Any] = []
    with ssh_pool(ssh_hosts, on_event=events.append):
        pass
    kinds = [type(e).__name__ for e in events]
    first_ready = kinds.index("NodeReady")
    started = {e.node for e in events[:first_ready] if isinstance(e, sky.BootstrapRequested)}
    assert started == {0, 1}, kinds
    # and each node's script ran (a warm host's as well: its phases only say so)
    scripts = {e.node for e in events if isinstance(e, sky.BootstrapPhase) and e.phase == "uv"}
    assert scripts == {0, 1}


def test_the_nodes_get_the_wheels_the_pool_assembled_at_its_start(
    ssh_hosts: SSHHosts, monkeypatch: Any
) -> None:
    import skyward.bootstrap.prepare as prepare

    async def assembled_again() -> Any:
        raise AssertionError("a node assembled skyward's wheels again")

    monkeypatch.setattr(prepare, "_client_wheels", assembled_again)
    with ssh_pool(ssh_hosts) as pool:
        assert (answer() @ pool) == [42, 42]


@sky.function
def answer() -> int:
    return 42


def test_a_cold_node_starts_its_worker_from_the_bytecode_the_client_compiled(tmp_path: Path) -> None:
    from ssh_hosts import hosts_running

    from skyward.bootstrap.bytecode import ENTRY_TIME, client_bundle

    assert client_bundle(wait=True) is not None  # made by an earlier pool of this client, or now
    with hosts_running(tmp_path, 1) as hosts:
        with ssh_pool(hosts) as pool:
            assert (answer() @ pool) == [42]
        site = next(hosts.servers[0].home.glob(".skyward/envs/*/venv/lib/python3.*/site-packages"))
    worker = next((site / "skyward" / "worker" / "__pycache__").glob("main.*.pyc"))
    header = worker.read_bytes()[:16]
    assert int.from_bytes(header[4:8], "little") == 0b11  # a checked-hash pyc (PEP 552)
    source_hash = importlib.util.source_hash((site / "skyward" / "worker" / "main.py").read_bytes())
    assert header[8:16] == source_hash  # of the very source installed there
    assert worker.stat().st_mtime == ENTRY_TIME  # unpacked from the bundle, not compiled again
