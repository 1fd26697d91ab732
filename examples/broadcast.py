"""Broadcast with `@`: run one call on EVERY node, and let each node find out where it is.

`task() @ pool` returns a list with one result per node, in node order. Inside the task,
`sky.instance_info()` says which node this is, and `sky.is_head()` picks out node 0, the natural
place for work that must happen once (logging, saving a checkpoint, ...).
"""

import skyward as sky


@sky.function
def describe() -> dict:
    info = sky.instance_info()  # only works inside a task running on a pool
    return {
        "node": info.node,
        "total_nodes": info.total_nodes,
        "is_head": sky.is_head(info),
        "head": f"{info.head_addr}:{info.head_port}",
    }


# `sky.stdout(only="head")` keeps print() from every node but the head: with 100 nodes you want
# one progress line, not 100. Put it above @sky.function.
@sky.stdout(only="head")
@sky.function
def train_step(step: int) -> float:
    info = sky.instance_info()
    loss = 1.0 / (step + 1 + info.node)  # stand-in for real training
    print(f"step {step}: loss {loss:.3f} (printed by node {info.node} only)")
    return loss


if __name__ == "__main__":
    with sky.Compute(provider=sky.Local(), nodes=2) as pool:
        for row in describe() @ pool:  # one dict per node, node 0 first
            print("node info:", row)

        losses = train_step(0) @ pool
        print("losses from every node:", [round(x, 3) for x in losses])

        # Pin a single call to the head node (or any node index) with pool.run(..., target=...).
        print("head only:", pool.run(describe(), target="head"))
