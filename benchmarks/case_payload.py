"""Case 4, payload: a float64 numpy array of 100 MB (random, so compression cannot help) sent as an
argument, and one returned, on a warm pool of 2; MB/s each way (MB = 10^6 bytes).

Each direction is timed on its own with wall-clock stamps taken on both sides (one machine, one
clock): to the worker, from the call until the task starts; from the worker, from the moment the
task returns (the array already made) until the caller has it.

On `sky.Local()` the array crosses in shared memory, not the worker's pipe (see
`skyward/transport/shm.py`): the sender copies it once into a segment and the receiver maps it.
The first transfer each way writes into fresh tmpfs pages, which costs about as much as the copy.
Later ones reuse a segment the receiver has released, so the median of 3 runs reflects a warm
pool. Ray also uses shared memory (its plasma object store); Dask sends through a socket.
"""

from __future__ import annotations

import time

from bench_tasks import produce, receive
from common import Config, Figure

NAME = "payload"


def size(config: Config) -> int:
    return config.pick(100_000_000, 20_000_000)


def figures() -> list[Figure]:
    return [
        Figure("payload.to_worker", "payload: argument to worker (MB/s)", "MB/s", "higher"),
        Figure("payload.from_worker", "payload: result from worker (MB/s)", "MB/s", "higher"),
    ]


def _array(nbytes: int):
    import numpy as np

    return np.random.default_rng(0).random(nbytes // 8)


def warm_up(peer, config: Config) -> None:
    small = _array(1_000_000)
    for _ in range(2):
        peer.call(receive, small)
        peer.call(produce, 1_000_000)


def measure(peer, config: Config) -> dict[str, float]:
    nbytes = size(config)
    array = _array(nbytes)
    sent = time.time()
    arrived = peer.call(receive, array)
    result, returned = peer.call(produce, nbytes)
    received = time.time()
    assert result.nbytes == nbytes, "the returned array has the wrong size"
    return {
        "payload.to_worker": nbytes / 1e6 / (arrived - sent),
        "payload.from_worker": nbytes / 1e6 / (received - returned),
    }
