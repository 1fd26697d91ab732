"""Case 2, latency: sequential no-op round trips on a warm pool of 2, p50 and p99.

The target compares latency with the ping-pong floors (case_floor), and this machine's speed
drifts by up to 2x over a minute: a floor measured a minute before the latency case can make the
same code look 1.7x or 3.1x the floor. So both ping-pongs are measured again here, in turns with
the framework's calls (ten rounds of a tenth of the calls, then as many round trips of each
floor), and the ratios of their p50s are figures of their own: latency and its floor from the
same seconds.
"""

from __future__ import annotations

import time
from contextlib import closing

import echo
from bench_tasks import noop
from common import Config, Figure, percentile

NAME = "latency"
#: How many turns the calls are split into, each followed by as many round trips of each floor.
TURNS = 10


def figures() -> list[Figure]:
    return [
        Figure("latency.p50", "latency: no-op round trip p50 (us)", "us", "lower"),
        Figure("latency.p99", "latency: no-op round trip p99 (us)", "us", "lower"),
        Figure("latency.vs_pipe", "latency: p50 / pipe ping-pong beside it (x)", "x", "lower"),
        Figure("latency.vs_mp_pipe", "latency: p50 / multiprocessing.Pipe beside it (x)", "x", "lower"),
    ]


def warm_up(peer, config: Config) -> None:
    for _ in range(config.pick(100, 20)):
        peer.call(noop)


def measure(peer, config: Config) -> dict[str, float]:
    per_turn = config.pick(1000, 200) // TURNS
    calls: list[float] = []
    pipe_floor: list[float] = []
    mp_floor: list[float] = []
    clock = time.perf_counter
    with closing(echo.PipeEcho()) as pipe_echo, closing(echo.ConnectionEcho()) as mp_echo:
        for _ in range(TURNS):
            for _ in range(per_turn):
                began = clock()
                peer.call(noop)
                calls.append(clock() - began)
            pipe_floor += echo.round_trips(pipe_echo, per_turn)
            mp_floor += echo.round_trips(mp_echo, per_turn)
    p50 = percentile(calls, 50)
    return {
        "latency.p50": p50 * 1e6,
        "latency.p99": percentile(calls, 99) * 1e6,
        "latency.vs_pipe": p50 / percentile(pipe_floor, 50),
        "latency.vs_mp_pipe": p50 / percentile(mp_floor, 50),
    }
