"""`sky.plugins.torch()` on real pools: two `sky.Local()` nodes (worker processes on this machine)
form a gloo process group on their first task, collectives and DDP work across them, and nothing
is left behind when the pool exits."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import cloudpickle
import pytest

import skyward as sky

# Test modules are not importable on the workers: ship this one by value, like a __main__ script.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

NODES = 2


def torch_pool(nodes: int = NODES, **plugin: Any) -> sky.Pool:
    plugin.setdefault("backend", "gloo")
    return sky.Compute(
        provider=sky.Local(), nodes=nodes, plugins=[sky.plugins.torch(**plugin)], console=False, logging=False
    )


@pytest.fixture(scope="module")
def pool() -> Iterator[sky.Pool]:
    with torch_pool() as compute:
        yield compute


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


# -- tasks ----------------------------------------------------------------------------------------


@sky.function
def all_reduce_rank_plus_one() -> tuple[int, int, int]:
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    t = torch.tensor([rank + 1])
    dist.all_reduce(t)
    return rank, dist.get_world_size(), int(t.item())


@sky.function
def topology() -> dict[str, Any]:
    import torch.distributed as dist

    info = sky.instance_info()
    names = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
    return {
        "env": {name: os.environ.get(name) for name in names},
        "node": info.node,
        "head_port": info.head_port,
        "rank": dist.get_rank(),
        "backend": dist.get_backend(),
        "pid": os.getpid(),
    }


@sky.function
def torchrun_style_script() -> int:
    """What code written for torchrun does: form the group itself, use it, destroy it."""
    import warnings

    import torch
    import torch.distributed as dist

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dist.init_process_group(backend="gloo", init_method="env://")
    t = torch.tensor([10 ** dist.get_rank()])
    dist.all_reduce(t)
    dist.destroy_process_group()
    return int(t.item())


def make_data() -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=g)
    y = x @ torch.tensor([[1.0], [-2.0], [3.0], [0.5]]) + 0.25
    return x, y


def linear(seed: int) -> Any:
    import torch

    torch.manual_seed(seed)
    return torch.nn.Linear(4, 1)


def fit(model: Any, x: Any, y: Any, steps: int) -> None:
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()


@sky.function
def train_ddp(steps: int) -> tuple[dict[str, Any], int]:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(linear(seed=100 + dist.get_rank()))  # different on each rank: DDP syncs rank 0's
    x, y = sky.shard(*make_data())
    fit(model, x, y, steps)
    state = {name: value.detach().clone() for name, value in model.module.state_dict().items()}
    return state, len(x)


# -- tests ----------------------------------------------------------------------------------------


def test_all_reduce_sums_over_every_rank(pool: sky.Pool) -> None:
    results = all_reduce_rank_plus_one() @ pool
    assert results == [(0, NODES, 3), (1, NODES, 3)]


def test_topology_env_matches_the_instance_info(pool: sky.Pool) -> None:
    results = topology() @ pool
    head_port = results[0]["head_port"]
    for node, result in enumerate(results):
        assert result["node"] == result["rank"] == node
        assert result["backend"] == "gloo"
        assert result["env"] == {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(head_port),
            "WORLD_SIZE": str(NODES),
            "RANK": str(node),
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
        }


def test_code_that_inits_and_destroys_the_group_itself_still_works(pool: sky.Pool) -> None:
    assert torchrun_style_script() @ pool == [11, 11]
    assert torchrun_style_script() @ pool == [11, 11]  # the group outlived the script's destroy
    assert all_reduce_rank_plus_one() @ pool == [(0, NODES, 3), (1, NODES, 3)]


def test_ddp_on_sharded_data_ends_with_identical_weights_equal_to_full_batch_training(pool: sky.Pool) -> None:
    import torch

    steps = 5
    (state0, n0), (state1, n1) = train_ddp(steps) @ pool
    assert n0 == n1 == 32  # each rank trained on its own half
    assert state0.keys() == state1.keys() == {"weight", "bias"}
    for name in state0:
        assert torch.equal(state0[name], state1[name]), name

    # DDP averages the two half-batch gradients, which is the full-batch gradient: training rank 0's
    # initial model on all the data here must land on the same weights.
    reference = linear(seed=100)
    assert not torch.allclose(reference.weight, state0["weight"])  # the pool really trained
    fit(reference, *make_data(), steps)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(state0[name], value, rtol=1e-5, atol=1e-6)


@sky.function
def rank_and_world() -> tuple[int, int]:
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def rank_and_world_for(item: int) -> tuple[int, int]:
    import torch.distributed as dist

    return dist.get_rank(), dist.get_world_size()


@pytest.mark.parametrize("first", ["one node", "the second node", "async", "map"])
def test_a_first_task_sent_to_one_node_still_forms_the_group(first: str) -> None:
    # The group is a collective: a first task on one node used to wait there for the other rank
    # until the rendezvous timed out, and every later collective failed with it.
    with torch_pool(timeout=60) as compute:
        if first == "one node":
            answers = [rank_and_world() >> compute]
        elif first == "the second node":
            answers = [compute.run(rank_and_world(), target=1)]
        elif first == "async":
            answers = [(rank_and_world() > compute).result(timeout=120)]
        else:
            answers = compute.map(rank_and_world_for, [0, 1, 2])
        assert all(world == NODES for _, world in answers)
        assert all_reduce_rank_plus_one() @ compute == [(0, NODES, 3), (1, NODES, 3)]
    if first == "the second node":
        assert answers == [(1, NODES)]


def test_after_the_pool_exits_no_worker_or_group_remains() -> None:
    import socket

    compute = torch_pool()
    with compute:
        results = topology() @ compute
        pids = [r["pid"] for r in results]
        port = results[0]["head_port"]
        assert all(pid_alive(pid) for pid in pids)
        started = time.monotonic()
    stop_seconds = time.monotonic() - started
    deadline = time.monotonic() + 10
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(pid_alive(pid) for pid in pids)
    assert stop_seconds < 10  # the workers exited on their own (group destroyed), not killed on a timeout
    with socket.socket() as sock:  # the rendezvous store on the head is gone with its port
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))


@sky.function
def nccl_all_reduce() -> tuple[str, float, str]:
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    t = torch.tensor([rank + 1.0], device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    return dist.get_backend(), float(t.item()), t.device.type


@pytest.mark.gpu
def test_nccl_is_the_default_on_cuda_and_reduces_on_the_gpu() -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    nodes = min(NODES, torch.cuda.device_count())  # NCCL wants one GPU per rank
    with torch_pool(nodes, backend=None) as compute:
        results = nccl_all_reduce() @ compute
    expected = float(sum(range(1, nodes + 1)))
    assert results == [("nccl", expected, "cuda")] * nodes
