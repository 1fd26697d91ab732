"""Case, WAN: Skyward's remote path across a real network's round trip, counted in round trips.

Every other remote figure is on loopback, where a round trip costs ~0.1 ms; a user sits 20-150 ms
from their machines. The two OpenSSH hosts of the ssh case (`tests/ssh/ssh_hosts.py`) are put
behind a user-space TCP proxy (`wan_proxy.py`, in its own process) that delays every chunk by a
one-way delay, in order: 25 ms each way for a 50 ms round trip, then 75 ms for 150 ms. The pool
connects to the proxy's ports on 127.0.0.1 (known_hosts pins each sshd's key for its proxy's
`[127.0.0.1]:port` too). Each figure is divided by the configured round trip (RTTs), beside the
floor measured through the same proxy: one byte echoed by `cat` over a raw SSH exec channel.

- one `>>` of a no-op (median of a few), target <= 1.2 RTT;
- `pool.map` of 400 no-ops on the 2 nodes, target <= 5 RTTs;
- `sky.gather` of 200 no-ops, target <= 5 RTTs;
- a warm pool of 2 ready (the hosts already hold the environment and uv): `with sky.Compute(...)`
  entered, in RTTs, target <= 8 RTTs; beside it, the same start's round trips beyond the
  machine's own work: each warm start through the delaying proxy is paired with one through a
  proxy with no delay (loopback), run just before it, and (t_wan - t_loopback) / RTT is what the
  start waits on the link (the workers' Python starts on a loaded 2-core machine are in both);
- a cold pool of 2 ready on fresh hosts (`start_hosts(fresh=True)`: no uv, no environment, no
  cache), beyond the install itself, target <= 15 RTTs. Each run starts two cold pools on new
  fresh hosts, one through the proxy with no delay (loopback) and one with the round trip; from
  each, the install's own work is taken out: the seconds of the bootstrap's install phases (`uv`,
  `venv`, `apt`, `pip`, `skyward`, as the bootstrap reports them; a phase's start and end cross
  the link alike) of the node whose phases took longest. The figure is the difference of the two,
  (t_wan - t_loopback) / RTT: the round trips the start waits on, without what the machine's
  load adds to both (the workers' start) or the installs' noise (seconds on a loaded machine).

Default configuration throughout (`sky.Worker()`). `SKYWARD_BENCH_WAN_RTTS=50,150` (the default)
picks the round trips in ms; `SKYWARD_BENCH_WAN_WARM_ONLY=1` measures the warm start only (a quick look
at the start path). The proxy's bandwidth cap (`WanProxy(rate_mbit=...)`) is not used by these figures.
Only Skyward runs it; without sshd it reports "missing".
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

from common import Config, Figure

NAME = "wan"
PEERS = ("Skyward",)
SSH_TESTS = Path(__file__).resolve().parents[1] / "tests" / "ssh"
MAP_ITEMS = 400
GATHER_ITEMS = 200


def rtts_ms() -> list[int]:
    text = os.environ.get("SKYWARD_BENCH_WAN_RTTS", "50,150")
    return [int(x) for x in text.split(",") if x.strip()]


def figures() -> list[Figure]:
    rows = []
    for rtt in rtts_ms():
        at = f"wan {rtt} ms RTT"
        rows += [
            Figure(f"wan{rtt}.floor", f"{at}: ssh exec echo through the proxy p50 (RTTs)", "RTTs", "lower"),
            Figure(f"wan{rtt}.noop", f"{at}: one `>>` no-op p50 (RTTs)", "RTTs", "lower"),
            Figure(f"wan{rtt}.map", f"{at}: pool.map of {MAP_ITEMS} no-ops, 2 nodes (RTTs)", "RTTs", "lower"),
            Figure(f"wan{rtt}.gather", f"{at}: sky.gather of {GATHER_ITEMS} no-ops (RTTs)", "RTTs", "lower"),
            Figure(f"wan{rtt}.warm_start", f"{at}: warm 2-host pool ready (RTTs)", "RTTs", "lower"),
            Figure(f"wan{rtt}.warm_beyond", f"{at}: warm 2-host pool ready, beyond the loopback start (RTTs)",
                   "RTTs", "lower"),
            Figure(f"wan{rtt}.cold_start", f"{at}: cold 2-host pool ready, beyond the install (RTTs)",
                   "RTTs", "lower"),
        ]
    return rows


def available() -> bool:
    sys.path.insert(0, str(SSH_TESTS))
    try:
        from ssh_hosts import find_sshd
    except ImportError:
        return False
    return find_sshd() is not None


def proxied(hosts: Any, ports: list[int], folder: Path) -> Any:
    """`hosts` as seen through the proxy: each server at 127.0.0.1:<its proxy's port>, with a
    known_hosts that pins the real server's key for that address too."""
    servers = [
        types.SimpleNamespace(address="127.0.0.1", port=port, user=s.user, host_key=s.host_key,
                              target=f"{s.user}@127.0.0.1:{port}")
        for s, port in zip(hosts.servers, ports, strict=True)
    ]
    known = folder / f"known_hosts_{'_'.join(map(str, ports))}"
    lines = [f"[127.0.0.1]:{s.port} {s.host_key.export_public_key().decode().strip()}\n" for s in servers]
    known.write_text(hosts.known_hosts.read_text() + "".join(lines))
    return types.SimpleNamespace(servers=servers, key_file=hosts.key_file, known_hosts=known)


def provider(view: Any) -> Any:
    import skyward as sky

    return sky.SSH(hosts=[s.target for s in view.servers], key_file=str(view.key_file),
                   known_hosts=str(view.known_hosts), python=sys.executable)


def warm_only() -> bool:
    return os.environ.get("SKYWARD_BENCH_WAN_WARM_ONLY", "") not in ("", "0")


def measure(config: Config) -> dict[str, list[float]]:
    import bench_tasks
    import cloudpickle
    from case_ssh import ChannelEcho
    from ssh_hosts import ssh_pool, start_hosts
    from wan_proxy import WanProxy

    import skyward as sky

    cloudpickle.register_pickle_by_value(bench_tasks)
    runs: dict[str, list[float]] = {f.key: [] for f in figures()}
    folder = Path(tempfile.mkdtemp(prefix="skyward-bench-wan-"))
    hosts = start_hosts(folder, 2)
    try:
        with ssh_pool(hosts):  # the environment built once, on loopback: the hosts are warm after
            pass
        for rtt_ms in rtts_ms():
            rtt = rtt_ms / 1e3
            upstreams = [(s.address, s.port) for s in hosts.servers]
            with WanProxy(upstreams, delay=rtt / 2) as proxy, WanProxy(upstreams, delay=0.0) as near:
                view = proxied(hosts, proxy.ports, folder)
                loopback = proxied(hosts, near.ports, folder)
                key = f"wan{rtt_ms}"
                for _ in range(config.repeat):
                    there = warm_start(loopback)
                    elapsed = warm_start(view)
                    runs[f"{key}.warm_start"].append(elapsed / rtt)
                    runs[f"{key}.warm_beyond"].append((elapsed - there) / rtt)
                if warm_only():
                    continue
                echo = ChannelEcho(view)
                try:
                    with sky.Compute(provider=provider(view), console=False, logging=False) as pool:
                        measure_pool(pool, echo, rtt, key, runs, config)
                finally:
                    echo.close()
        for rtt_ms in [] if warm_only() else rtts_ms():
            for _ in range(config.repeat):
                rtt = rtt_ms / 1e3
                loopback = cold_start(folder, 0.0)
                runs[f"wan{rtt_ms}.cold_start"].append((cold_start(folder, rtt) - loopback) / rtt)
        return runs
    finally:
        hosts.stop()
        cloudpickle.unregister_pickle_by_value(bench_tasks)


def warm_start(view: Any) -> float:
    """Seconds until a pool of 2 is ready on the warm hosts `view` names."""
    import skyward as sky

    began = time.perf_counter()
    with sky.Compute(provider=provider(view), console=False, logging=False):
        return time.perf_counter() - began


def measure_pool(
    pool: Any, echo: Any, rtt: float, key: str, runs: dict[str, list[float]], config: Config
) -> None:
    import bench_tasks

    import skyward as sky

    noop = sky.function(bench_tasks.noop)
    for _ in range(3):  # the function reaches both workers; the first calls are not measured
        noop() >> pool
    pool.map(bench_tasks.noop, range(20))
    calls = config.pick(9, 5)
    for _ in range(config.repeat):
        echo.round_trips(2)
        runs[f"{key}.floor"].append(statistics.median(echo.round_trips(calls)) / rtt)
        samples = []
        for _ in range(calls):
            began = time.perf_counter()
            noop() >> pool
            samples.append(time.perf_counter() - began)
        runs[f"{key}.noop"].append(statistics.median(samples) / rtt)
        began = time.perf_counter()
        results = pool.map(bench_tasks.noop, range(MAP_ITEMS))
        runs[f"{key}.map"].append((time.perf_counter() - began) / rtt)
        assert results == list(range(MAP_ITEMS)), "map returned the wrong results"
        began = time.perf_counter()
        results = sky.gather(*(noop(i) for i in range(GATHER_ITEMS))) >> pool
        runs[f"{key}.gather"].append((time.perf_counter() - began) / rtt)
        assert list(results) == list(range(GATHER_ITEMS)), "gather returned the wrong results"


def cold_start(folder: Path, rtt: float) -> float:
    """Seconds until a pool of 2 is ready on 2 new fresh hosts behind the proxy at `rtt`, less the
    longest node's install phases (the module's docstring)."""
    from ssh_hosts import start_hosts
    from wan_proxy import WanProxy

    import skyward as sky
    from skyward.bootstrap.environments import ENVIRONMENT_PHASES
    from skyward.observe.events import BootstrapPhase

    fresh = Path(tempfile.mkdtemp(prefix="cold-", dir=folder))
    hosts = start_hosts(fresh, 2, fresh=True)
    installs: dict[int, float] = {}

    def count(event: Any) -> None:
        if event.event == "completed" and event.phase in ("uv", *ENVIRONMENT_PHASES):
            installs[event.node] = installs.get(event.node, 0.0) + event.seconds

    try:
        with WanProxy([(s.address, s.port) for s in hosts.servers], delay=rtt / 2) as proxy:
            view = proxied(hosts, proxy.ports, fresh)
            pool = sky.Compute(provider=provider(view), console=False, logging=False)
            pool.on(BootstrapPhase, count)
            began = time.perf_counter()
            with pool:
                elapsed = time.perf_counter() - began
        return elapsed - max(installs.values(), default=0.0)
    finally:
        hosts.stop()
