"""Case 7, SSH: Skyward's round trip and throughput over real OpenSSH on loopback.

Two OpenSSH servers on 127.0.0.2 and 127.0.0.3 (the test suite's fixture, `tests/ssh/ssh_hosts.py`)
stand in for two hosts; `sky.SSH(python=sys.executable)` bootstraps each in seconds. The figures
are the sequential no-op round trip p50 and `pool.map` of no-ops, as in the latency and throughput
cases, but through asyncssh and sshd instead of pipes, and the time a two-host pool takes to be
ready on fresh hosts (cold: the venv built, skyward installed) and again on the same hosts (warm:
the environment reused, `skyward.bootstrap.environments`). The floor beside them: a byte echoed
through a raw asyncssh exec channel (`cat`) on the same host, the round trip no SSH transport can
beat; in between each run, so both see the same phase of this machine. Only Skyward runs it: the
peers have no SSH transport. Needs `sshd` (Debian's openssh-server); without it the case reports "missing".
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import Config, Figure

NAME = "ssh"
PEERS = ("Skyward",)
SSH_TESTS = Path(__file__).resolve().parents[1] / "tests" / "ssh"


def figures() -> list[Figure]:
    return [
        Figure("ssh.p50", "ssh loopback: no-op round trip p50 (us)", "us", "lower"),
        Figure("ssh.tasks_per_s", "ssh loopback: no-op tasks/s", "tasks/s", "higher"),
        Figure("ssh.cold_start_s", "ssh loopback: 2-host pool ready, fresh hosts (s)", "s", "lower"),
        Figure("ssh.warm_start_s", "ssh loopback: 2-host pool ready, warm hosts (s)", "s", "lower"),
        Figure("ssh.floor_p50", "ssh loopback: raw asyncssh channel echo p50 (us)", "us", "lower"),
        Figure("ssh.vs_floor", "ssh loopback: no-op p50 / channel echo p50 (x)", "x", "lower"),
    ]


def available() -> bool:
    sys.path.insert(0, str(SSH_TESTS))
    try:
        from ssh_hosts import find_sshd
    except ImportError:
        return False
    return find_sshd() is not None


def measure(config: Config) -> dict[str, list[float]]:
    import bench_tasks
    import cloudpickle
    from ssh_hosts import ssh_pool, start_hosts

    import skyward as sky

    # The hosts' workers do not see this folder: ship the benchmark's tasks by value.
    cloudpickle.register_pickle_by_value(bench_tasks)
    runs: dict[str, list[float]] = {"ssh.p50": [], "ssh.tasks_per_s": [], "ssh.cold_start_s": [],
                                    "ssh.warm_start_s": [], "ssh.floor_p50": [], "ssh.vs_floor": []}
    for _ in range(config.repeat):
        fresh = start_hosts(Path(tempfile.mkdtemp(prefix="skyward-bench-ssh-")), 2)
        try:
            for key in ("ssh.cold_start_s", "ssh.warm_start_s"):
                began = time.perf_counter()
                with ssh_pool(fresh):
                    runs[key].append(time.perf_counter() - began)
        finally:
            fresh.stop()
    hosts = start_hosts(Path(tempfile.mkdtemp(prefix="skyward-bench-ssh-")), 2)
    try:
        with ssh_pool(hosts) as pool:
            noop = sky.function(bench_tasks.noop)
            for _ in range(config.pick(200, 50)):
                noop() >> pool
            count = config.pick(5_000, 500)
            for _ in range(config.repeat):
                samples = []
                for _ in range(config.pick(1_000, 200)):
                    began = time.perf_counter()
                    noop() >> pool
                    samples.append(time.perf_counter() - began)
                runs["ssh.p50"].append(statistics.median(samples) * 1e6)
                floor = channel_echo_p50(hosts, config.pick(1_000, 200))
                runs["ssh.floor_p50"].append(floor)
                runs["ssh.vs_floor"].append(runs["ssh.p50"][-1] / floor)
                began = time.perf_counter()
                results = pool.map(bench_tasks.noop, range(count))
                runs["ssh.tasks_per_s"].append(count / (time.perf_counter() - began))
                assert results == list(range(count)), "map returned the wrong results"
            return runs
    finally:
        hosts.stop()
        cloudpickle.unregister_pickle_by_value(bench_tasks)


def channel_echo_p50(hosts: Any, rounds: int) -> float:
    """The floor: p50 (us) of a byte echoed by `cat` over one asyncssh exec channel to the first host,
    with the hosts' own key and pinned host key, as Skyward's channels are opened."""
    import asyncio

    import asyncssh

    server = hosts.servers[0]

    async def run() -> float:
        async with asyncssh.connect(
            server.address, port=server.port, username=server.user, client_keys=[str(hosts.key_file)],
            known_hosts=str(hosts.known_hosts),
        ) as conn:
            process = await conn.create_process("cat", encoding=None)
            samples = []
            for _ in range(rounds):
                began = time.perf_counter()
                process.stdin.write(b"o")
                await process.stdout.readexactly(1)
                samples.append(time.perf_counter() - began)
            process.stdin.write_eof()
            return statistics.median(samples) * 1e6

    return asyncio.run(run())
