"""How much slower the same Python work runs right after a process wakes from a wait.

    python benchmarks/wakeup_cost.py [--rounds N]

A no-op round trip is mostly Python work: encoding the task, decoding it on the worker, encoding
and decoding the answer. Timed in a tight loop, that work is a small share of Skyward's latency;
timed where it really runs (just after the process slept in a read while its partner worked),
it takes much longer, because the caches and branch predictors it warmed were cooled meanwhile,
and the longer the wait the colder they are. This script shows the effect on this machine with
Skyward's own frame code and no pool: the parent waits on a pipe while a child spins for a
given time, then runs the same work it ran hot. The latency figures in README.md read with it:
the pipe ping-pong floor has no such work, so a Python protocol cannot reach a small multiple of
it on a machine where this slowdown is large.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import deque

from skyward.messages import TaskMessage
from skyward.wire import FrameDecoder, Kind, encode

WAITS_US = (0, 20, 60, 200)


def frame_work(decoder: FrameDecoder, frames: deque) -> None:
    """Both ends' wire work for one no-op task: encode and decode the task, then the answer."""
    task = TaskMessage.wire(b"k" * 16, (1,), {}, "noop", False, 16)
    for parts in (encode(Kind.TASK, 7, task, plain=True), encode(Kind.RESULT, 7, 1)):
        data = b"".join(parts)
        target = decoder.get_buffer()
        target[: len(data)] = data
        del target
        decoder.buffer_updated(len(data))
        frames.popleft()


def spin_child(requests: int, replies: int) -> None:
    """Echo each request after spinning for the microseconds it names."""
    while request := os.read(requests, 8):
        end = time.perf_counter_ns() + int.from_bytes(request, "little") * 1000
        while time.perf_counter_ns() < end:
            pass
        os.write(replies, b"o")


def timed(work, rounds: int, before=lambda: None) -> float:
    samples = []
    for _ in range(rounds):
        before()
        began = time.perf_counter_ns()
        work()
        samples.append(time.perf_counter_ns() - began)
    return statistics.median(samples[rounds // 10 :]) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3000)
    rounds = parser.parse_args().rounds
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(to_child_w)
        os.close(to_parent_r)
        spin_child(to_child_r, to_parent_w)
        os._exit(0)
    os.close(to_child_r)
    os.close(to_parent_w)
    frames: deque = deque()
    decoder = FrameDecoder(frames.append, stage_size=64 * 1024)
    work = lambda: frame_work(decoder, frames)  # noqa: E731
    hot = timed(work, rounds)
    print(f"{'wait before the work':>22} | {'work p50 (us)':>13} | vs hot")
    print(f"{'none (tight loop)':>22} | {hot:13.2f} | 1.00x")
    for wait in WAITS_US:

        def wait_for_partner(wait: int = wait) -> None:
            os.write(to_child_w, wait.to_bytes(8, "little"))
            os.read(to_parent_r, 1)

        after = timed(work, rounds, before=wait_for_partner)
        print(f"{f'a pipe read, {wait} us':>22} | {after:13.2f} | {after / hot:.2f}x")
    os.close(to_child_w)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
