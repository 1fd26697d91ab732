"""Case 9, lingering machines: a cloud pool ready on machines the last pool left, against a new one.

The test suite's fake RunPod API (`tests/runpod/fake_runpod.py`) on loopback, whose pods are real
OpenSSH servers that boot with the keys the provider sent and run their boot guardian. Per run:
a 2-node pool with `Options(linger=True)` is started on new pods (launched, logged in,
bootstrapped: `linger.new_pool_s`) and exits, parking them; a second pool with the same spec then
adopts them (`linger.adopted_pool_s`), and deletes them at its exit. Both are timed from
`Compute.__enter__` to its return, the pool ready. The new pods' figure is this machine's floor of
a launch (the fake boots a pod in milliseconds, where a cloud takes minutes), so the ratio
understates what adoption saves on a real cloud; the adopted figure is what a user waits.
Only Skyward runs it. Needs `sshd` and aiohttp (the test dependencies).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from common import Config, Figure

NAME = "linger"
PEERS = ("Skyward",)
TESTS = Path(__file__).resolve().parents[1] / "tests"


def figures() -> list[Figure]:
    return [
        Figure("linger.new_pool_s", "fake RunPod: 2-node pool ready on new pods (s)", "s", "lower"),
        Figure("linger.adopted_pool_s", "fake RunPod: 2-node pool ready on parked pods (s)", "s", "lower"),
    ]


def _paths() -> None:
    for folder in (TESTS, TESTS / "ssh", TESTS / "runpod"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


def available() -> bool:
    _paths()
    try:
        import aiohttp  # noqa: F401
        from ssh_hosts import find_sshd
    except ImportError:
        return False
    return find_sshd() is not None


def measure(config: Config) -> dict[str, list[float]]:
    import os

    _paths()
    from cloud_fakes import serving
    from fake_runpod import FakeRunPod
    from runpod_support import API_KEY, runpod_pool

    runs: dict[str, list[float]] = {"linger.new_pool_s": [], "linger.adopted_pool_s": []}
    home = os.environ.get("SKYWARD_HOME")
    os.environ["SKYWARD_HOME"] = tempfile.mkdtemp(prefix="skyward-bench-linger-home-")
    try:
        for _ in range(config.repeat):
            folder = Path(tempfile.mkdtemp(prefix="skyward-bench-linger-"))
            with serving(FakeRunPod(folder / "pods", API_KEY)) as api:
                for key, linger in (("linger.new_pool_s", True), ("linger.adopted_pool_s", False)):
                    compute = runpod_pool(api, nodes=2, accelerator="A100", linger=linger, ttl=120)
                    began = time.perf_counter()
                    with compute:
                        runs[key].append(time.perf_counter() - began)
                assert api.pods == {} and len(api.creates) == 2, "the second pool did not adopt the pods"
    finally:
        if home is None:
            os.environ.pop("SKYWARD_HOME", None)
        else:
            os.environ["SKYWARD_HOME"] = home
    return runs
