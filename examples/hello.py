"""Hello, Skyward: define a function, open a pool, run the function on it.

Run it with `python examples/hello.py`. `sky.Local()` starts each node as a worker process on this
machine, so no cloud account is needed; swap in `sky.AWS()` (and an accelerator) to run the very
same code on cloud machines.
"""

import os
import socket

import skyward as sky


# 1. Mark a function for remote execution. Calling it now runs NOTHING: it returns a
#    PendingFunction, a frozen snapshot of (function, args, kwargs).
@sky.function
def greet(name: str) -> str:
    return f"hello {name}, from pid {os.getpid()} on {socket.gethostname()}"


@sky.function
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    pending = greet("world")
    print("calling greet() gave:", pending)  # PendingFunction(greet, ...): nothing ran yet

    # 2. Open a pool. Entering the `with` block starts the nodes; leaving it stops them.
    with sky.Compute(provider=sky.Local(), nodes=2) as pool:
        # 3. Dispatch with an operator: `>>` runs the call on one node and returns its result.
        print("greet:", pending >> pool)
        print("add(2, 3) =", add(2, 3) >> pool)

        # Inside the block, `>> sky` means "the active pool", so helpers need not pass it around.
        print("add(40, 2) via >> sky =", add(40, 2) >> sky)

        print("nodes ready:", pool.current_nodes())
        print("my pid:", os.getpid(), "(the greetings above came from other processes)")

    # The function is still an ordinary function when you want it to be: `.local` runs it here.
    print("add.local(1, 1) =", add.local(1, 1))
