"""Shared state across the nodes of a pool: `sky.counter`, `sky.set`, `sky.lock`, `sky.barrier`.

Run it with `python examples/shared_state.py`. The two tasks are the reference's collections
example as written: `worker` skips items some node has seen already, counts the rest and takes a
pool-wide lock around its checkpoint; `phased` holds all 4 nodes at a barrier between two steps.
The collections live on this machine (the client), so the same code runs on every provider.
"""

import time

import skyward as sky


def save_progress():
    time.sleep(0.01)  # stands in for writing a checkpoint: only one node at a time gets here


def do_part_one():
    sky.dict("phases")[f"one-{sky.instance_info().node}"] = time.time()


def do_part_two():
    sky.dict("phases")[f"two-{sky.instance_info().node}"] = time.time()


@sky.function
def worker(item):
    processed = sky.counter("processed")
    seen = sky.set("seen")
    if item in seen:
        return None
    seen.add(item)
    processed.increment()
    with sky.lock("checkpoint"):
        save_progress()
    return item


# coordinate a synchronized step across all 4 nodes:
@sky.function
def phased():
    b = sky.barrier("sync", n=4)
    do_part_one()
    b.wait()  # blocks until all 4 nodes arrive
    do_part_two()


if __name__ == "__main__":
    with sky.Compute(provider=sky.Local(), nodes=4, console=False) as pool:
        first = sky.gather(*(worker(i) for i in range(8))) >> pool
        again = sky.gather(*(worker(i) for i in range(8))) >> pool  # every item seen already
        print("first pass:", first)
        print("second pass:", again)
        print("processed:", sky.counter("processed").value)  # read on the client, in the block

        phased() @ pool
        phases = sky.dict("phases")
        last_one = max(phases[f"one-{n}"] for n in range(4))
        first_two = min(phases[f"two-{n}"] for n in range(4))
        print("every node finished part one before any began part two:", last_one <= first_two)
