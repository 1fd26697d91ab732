"""Case, relay: a 100 MB argument broadcast to 4 nodes over a 100 Mbit/s client uplink.

Four OpenSSH hosts on loopback (`tests/ssh/ssh_hosts.py`), the client reaching each through a
user-space proxy (`wan_proxy.py`) whose token-bucket cap is one for all four routes together, per
direction: the client's own link, 100 Mbit/s. The nodes reach each other directly, at each host's
own sshd (the pool's own network): `skyward.client.relay.peer_address` is pointed there, as a
cloud's private addresses would be.

- one copy: `f(x) >> pool` with a new 100 MB array (one node, one copy up the link);
- broadcast: `f(x) @ pool` with another new 100 MB array, the nodes relaying it (target <= 1.5x
  one copy);
- broadcast, every copy from the client (the relay off: `RELAY_MIN` above the argument), context;
- the ratios of the two broadcasts to one copy.

Every array is new, so no node holds it yet. Times include pickling and hashing the argument on
the client. Only Skyward runs it; without sshd it reports "missing".
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import Config, Figure

NAME = "relay"
PEERS = ("Skyward",)
SSH_TESTS = Path(__file__).resolve().parents[1] / "tests" / "ssh"
NODES = 4
#: Megabytes of the argument, and the client's link in Mbit/s (`SKYWARD_BENCH_RELAY_MB` to change).
SIZE_MB = int(os.environ.get("SKYWARD_BENCH_RELAY_MB", "100"))
UPLINK_MBIT = 100.0
#: One-way delay of the client's link (a 10 ms round trip).
DELAY = 0.005


def figures() -> list[Figure]:
    at = f"{SIZE_MB} MB, {NODES} nodes, {UPLINK_MBIT:g} Mbit/s uplink"
    return [
        Figure("relay.one_copy", f"relay ({at}): one copy, `>>` (s)", "s", "lower"),
        Figure("relay.broadcast", f"relay ({at}): `@` broadcast, relayed by the nodes (s)", "s", "lower"),
        Figure("relay.no_relay", f"relay ({at}): `@`, every copy from the client (s)", "s", "lower"),
        Figure("relay.ratio", f"relay ({at}): broadcast / one copy", "x", "lower"),
        Figure("relay.no_relay_ratio", f"relay ({at}): broadcast without relay / one copy", "x", "lower"),
    ]


def available() -> bool:
    sys.path.insert(0, str(SSH_TESTS))
    try:
        from ssh_hosts import find_sshd
    except ImportError:
        return False
    return find_sshd() is not None


def checksum(data: Any) -> int:
    """What each node computes: proof it holds the whole argument (module-level: shipped by value)."""
    import zlib

    return zlib.crc32(memoryview(data))


def measure(config: Config) -> dict[str, list[float]]:
    import cloudpickle
    import numpy as np
    from case_wan import provider, proxied
    from ssh_hosts import ssh_pool, start_hosts
    from wan_proxy import WanProxy

    import skyward as sky
    from skyward.client import relay

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    runs: dict[str, list[float]] = {f.key: [] for f in figures()}
    folder = Path(tempfile.mkdtemp(prefix="skyward-bench-relay-"))
    hosts = start_hosts(folder, NODES)
    rng = np.random.default_rng(0)
    original = relay.peer_address
    try:
        with ssh_pool(hosts):  # the environment built once, on loopback: the hosts are warm after
            pass
        upstreams = [(s.address, s.port) for s in hosts.servers]
        with WanProxy(upstreams, delay=DELAY, rate_mbit=UPLINK_MBIT, shared=True) as proxy:
            direct = {port: up for port, up in zip(proxy.ports, upstreams, strict=True)}
            relay.peer_address = lambda instance: direct[instance.ssh_port]  # the pool's own network
            view = proxied(hosts, proxy.ports, folder)
            task = sky.function(checksum)
            with sky.Compute(provider=provider(view), nodes=NODES, console=False, logging=False) as pool:
                task(b"warm") @ pool  # the function reaches every worker first
                for _ in range(config.repeat):
                    one = _timed(lambda data: task(data) >> pool, rng)
                    both = _timed(lambda data: task(data) @ pool, rng)
                    runs["relay.one_copy"].append(one)
                    runs["relay.broadcast"].append(both)
                    runs["relay.ratio"].append(both / one)
                    saved = relay.RELAY_MIN
                    relay.RELAY_MIN = 1 << 40
                    try:
                        every = _timed(lambda data: task(data) @ pool, rng)
                    finally:
                        relay.RELAY_MIN = saved
                    runs["relay.no_relay"].append(every)
                    runs["relay.no_relay_ratio"].append(every / one)
                    print(
                        f"relay: one copy {one:.2f} s, broadcast {both:.2f} s ({both / one:.2f}x), "
                        f"without relay {every:.2f} s ({every / one:.2f}x)",
                        flush=True,
                    )
        return runs
    finally:
        relay.peer_address = original
        hosts.stop()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _timed(send: Any, rng: Any) -> float:
    """Seconds to send a new `SIZE_MB` array and have every answer back (checked)."""
    import zlib

    data = _new(rng)
    expected = zlib.crc32(memoryview(data))
    began = time.perf_counter()
    answer = send(data)
    took = time.perf_counter() - began
    answers = answer if isinstance(answer, list) else [answer]
    assert answers and all(a == expected for a in answers), "a node got other bytes"
    return took


def _new(rng: Any) -> Any:
    import numpy as np

    return rng.integers(0, 255, SIZE_MB << 20, dtype=np.uint8)


if __name__ == "__main__":
    print(measure(Config(quick=True, repeat=1)) if available() else "sshd is missing")
