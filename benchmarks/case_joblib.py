"""Case 5, joblib: `Parallel(n_jobs=-1)` over 2,000 small tasks, wall time, on a warm backend.

Skyward runs it on a pool of 2 with `sky.plugins.joblib()` (which makes the pool joblib's default
backend inside the `with` block); the peer is joblib's own loky backend (n_jobs=-1 is this
machine's cores). Other frameworks do not apply.
"""

from __future__ import annotations

import time

from bench_tasks import square
from common import Config, Figure

NAME = "joblib"
#: The columns this case fills; the others show "n/a".
PEERS = ("Skyward", "loky")


def figures() -> list[Figure]:
    return [Figure("joblib.wall", "joblib: Parallel over small tasks (ms)", "ms", "lower")]


def available() -> bool:
    import importlib.util

    return importlib.util.find_spec("joblib") is not None


def _run_parallel(count: int) -> float:
    from joblib import Parallel, delayed

    began = time.perf_counter()
    results = Parallel(n_jobs=-1)(delayed(square)(i) for i in range(count))
    elapsed = time.perf_counter() - began
    assert results == [i * i for i in range(count)], "Parallel returned the wrong results"
    return elapsed * 1e3


def measure(peer_name: str, config: Config) -> list[float]:
    """All repetitions for one backend, after one warm-up call."""
    count = config.pick(2_000, 2_000)
    if peer_name == "Skyward":
        import skyward as sky

        with sky.Compute(
            provider=sky.Local(), nodes=2, console=False, logging=False, plugins=[sky.plugins.joblib()]
        ):
            _run_parallel(200)
            return [_run_parallel(count) for _ in range(config.repeat)]
    from joblib import parallel_config

    with parallel_config(backend="loky"):
        _run_parallel(200)
        return [_run_parallel(count) for _ in range(config.repeat)]
