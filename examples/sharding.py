"""Data sharding: broadcast one call, and let each node work on its own disjoint slice of the data.

`sky.shard(data)` runs inside a task and returns this node's part, of the same type as `data`
(a list stays a list, a numpy array stays an array). Every node computes the split the same way,
so the parts never overlap and together cover the whole input. Combine the per-node results on the
client: `@` gives you one result per node.
"""

import numpy as np

import skyward as sky


@sky.function
def sum_my_part(numbers: list[int]) -> dict:
    part = sky.shard(numbers)  # node 0 gets the first half, node 1 the second half
    return {"node": sky.instance_info().node, "items": len(part), "first": part[0], "sum": sum(part)}


@sky.function
def fit_my_part(x: np.ndarray, y: np.ndarray) -> dict:
    # Shard x and y together: the same (shuffled) row indices are used for both, so pairs stay aligned.
    # shuffle=True with a fixed seed gives every node the same permutation, hence disjoint parts.
    x_part, y_part = sky.shard(x, y, shuffle=True, seed=42)
    slope = float(np.dot(x_part, y_part) / np.dot(x_part, x_part))  # least squares through the origin
    return {
        "node": sky.instance_info().node,
        "type": type(x_part).__name__,
        "rows": len(x_part),
        "slope": slope,
        "ids": sorted(int(v) for v in x_part),
    }


if __name__ == "__main__":
    numbers = list(range(1, 101))  # 1..100, total 5050

    # x and y where y = 3x exactly, so every node should find a slope of 3.
    x = np.arange(1, 21, dtype=float)
    y = 3.0 * x

    with sky.Compute(provider=sky.Local(), nodes=2) as pool:
        parts = sum_my_part(numbers) @ pool
        for p in parts:
            print(f"node {p['node']}: {p['items']} items starting at {p['first']}, partial sum {p['sum']}")
        total = sum(p["sum"] for p in parts)  # aggregate on the client
        print(f"total of partial sums: {total} (expected {sum(numbers)})")

        fits = fit_my_part(x, y) @ pool
        for f in fits:
            print(f"node {f['node']}: {f['rows']} rows as {f['type']}, slope {f['slope']:.2f}")
        seen = sorted(v for f in fits for v in f["ids"])
        overlap = set(fits[0]["ids"]) & set(fits[1]["ids"])
        print(f"shuffled shards cover all {len(seen)} rows, overlap: {len(overlap)} rows")
        print(f"mean slope: {np.mean([f['slope'] for f in fits]):.2f}")
