"""joblib on a Skyward pool: `Parallel(n_jobs=-1)` sends its batches to the pool's workers.

Run it with `python examples/joblib_parallel.py` (it needs joblib: `pip install joblib`;
`bash scripts/demo.sh` installs it). `sky.plugins.joblib()` makes the pool joblib's default backend
while the `with` block is open, so code written for joblib, or a scikit-learn estimator's
`n_jobs=-1`, runs on the pool without a change. `n_jobs=-1` means every task slot of the pool:
nodes times `Worker(concurrency=...)`.
"""

import os

from joblib import Parallel, delayed

import skyward as sky


def where(x: int) -> tuple[int, int]:
    """An ordinary function, not a `@sky.function`: joblib ships it, the plugin runs it on a node."""
    return x, os.getpid()


def fails(x: int) -> int:
    if x == 3:
        raise ValueError(f"no good: {x}")
    return x


if __name__ == "__main__":
    with sky.Compute(provider=sky.Local(), nodes=2, plugins=[sky.plugins.joblib()], console=False):
        # The README's snippet, as written there.
        squares = Parallel(n_jobs=-1)(delayed(pow)(x, 2) for x in range(10))
        print("squares:", squares)

        # Where the calls ran: worker processes of the pool, not this one.
        placed = Parallel(n_jobs=-1)(delayed(where)(x) for x in range(20))
        pids = {pid for _, pid in placed}
        print("results in order:", [x for x, _ in placed] == list(range(20)))
        print("ran in this process:", os.getpid() in pids)

        # A call's exception reaches the caller with its own type, as with joblib's own backends.
        try:
            Parallel(n_jobs=-1)(delayed(fails)(x) for x in range(5))
        except ValueError as error:
            print("ValueError from a task:", error)

    # Outside the block joblib is back to its own default backend (local processes).
    print("after the pool:", Parallel(n_jobs=2)(delayed(pow)(x, 3) for x in range(4)))
