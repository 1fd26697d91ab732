"""Running many calls at once: `&`, `sky.gather`, streaming gather, `pool.map` and `>` futures.

Every form below sends independent calls to the pool's nodes and collects the results; they differ
only in how you write the group down and how you get the results back.
"""

import os
import time

import skyward as sky


@sky.function
def square(x: int) -> int:
    return x * x


@sky.function
def slow_square(x: int, delay: float) -> tuple[int, int]:
    time.sleep(delay)  # pretend this is real work
    return x, x * x


@sky.function
def where() -> int:
    return os.getpid()


def cube(x: int) -> int:  # NOT decorated: pool.map wraps it for you
    return x**3


if __name__ == "__main__":
    with sky.Compute(provider=sky.Local(), nodes=2) as pool:
        # `&` chains calls into a group; `>>` runs the group in parallel and returns a tuple,
        # in the order the calls were written.
        a, b, c = (square(2) & square(3) & square(4)) >> pool
        print("& group:", a, b, c)

        # `sky.gather` is the same thing for a number of calls known only at run time.
        squares = sky.gather(*[square(x) for x in range(8)]) >> pool
        print("gather:", list(squares))

        # With stream=True you get a generator; ordered=False yields each result as it finishes,
        # so the fast call (0.1 s) arrives before the slow one (0.6 s) even though it came second.
        arrivals = []
        for x, sq in sky.gather(slow_square(1, 0.6), slow_square(2, 0.1), stream=True, ordered=False) >> pool:
            print(f"  streamed: {x}^2 = {sq}")
            arrivals.append(x)
        print("gather stream arrival order:", arrivals)

        # pool.map: one task per item, results in input order. The function need not be decorated.
        print("map:", pool.map(cube, [1, 2, 3, 4]))

        # `>` dispatches without waiting and returns a concurrent.futures.Future.
        futures = [slow_square(x, 0.2) > pool for x in range(4)]
        print("futures submitted; doing other work while they run...")
        print("futures:", [f.result() for f in futures])

        # Parallel really means different nodes (different worker processes here).
        pids = sky.gather(*[where() for _ in range(4)]) >> pool
        print("distinct worker processes used:", len(set(pids)))
