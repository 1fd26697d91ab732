"""Streaming: results that arrive while the task still runs, and inputs read only as needed.

- A `@sky.function` that is a generator (uses `yield`) returns an iterator from `>>`: you get each
  item as soon as the worker yields it, instead of waiting for a list at the end.
- An iterator passed as an argument (or a parameter annotated `Iterator[...]`) is not pickled up
  front: the worker pulls items from your process as it needs them, so it can be endless or huge.
- Both together make a bidirectional pipeline: items go out, results come back, one by one.
"""

import itertools
import time
from collections.abc import Iterator

import skyward as sky


@sky.function
def countdown(n: int):
    for i in range(n, 0, -1):
        time.sleep(0.1)  # pretend each step takes a while
        yield i


@sky.function
def first_above(numbers: Iterator[int], limit: int) -> int:
    for x in numbers:  # each `next` asks the client for the next item
        if x > limit:
            return x
    return -1


@sky.function
def double_all(numbers: Iterator[int]):
    for x in numbers:
        yield 2 * x


if __name__ == "__main__":
    produced = []

    def numbers_from_client():
        """An endless generator on the client: only what the worker asks for is ever produced."""
        for x in itertools.count():
            produced.append(x)
            yield x

    with sky.Compute(provider=sky.Local(), nodes=2) as pool:
        # 1. Generator results: items are printed as they arrive, about 0.1 s apart.
        start = time.monotonic()
        for i in countdown(5) >> pool:
            print(f"countdown {i} at +{time.monotonic() - start:.1f}s")

        # 2. Lazy iterator argument: an endless stream is fine, the worker stops reading at 10.
        print("first above 10:", first_above(numbers_from_client(), 10) >> pool)
        print("client produced only", len(produced), "items (window of read-ahead included)")

        # 3. Bidirectional: stream in, stream out.
        doubled = list(double_all(iter(range(6))) >> pool)
        print("doubled:", doubled)

        # You may stop early: closing the iterator cancels the remote generator.
        stream = countdown(1000) >> pool
        for i in stream:
            if i <= 997:
                break
        stream.close()
        print("stopped an endless-ish stream early at", i)
