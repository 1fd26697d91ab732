"""Real GPU checks of Skyward on a Local pool: torch nccl, jax on GPU, a plain CUDA task.

Run on a machine with an NVIDIA GPU and skyward, skyward-torch, skyward-jax installed:
`python scripts/gpu_checks.py` prints one line per check and "ALL OK" (exit 0) or the failures.
The GPU-only tests (`pytest tests/core/test_gpu_plugins.py tests/torch tests/jax`) cover the same
ground as assertions; this script shows the devices and figures a person wants to see.
"""
from __future__ import annotations

import os
import sys
import time
import traceback

import skyward as sky


@sky.function
def nccl_all_reduce_one_rank() -> dict:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    t = torch.tensor([dist.get_rank() + 41.0, 1.0], device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    return {
        "backend": dist.get_backend(),
        "rank": dist.get_rank(),
        "world_size": dist.get_world_size(),
        "device_name": torch.cuda.get_device_name(0),
        "result": t.tolist(),
        "result_device": str(t.device),
        "nccl_version": ".".join(map(str, torch.cuda.nccl.version())),
        "pid": os.getpid(),
    }


@sky.function
def jax_on_gpu() -> dict:
    import jax
    import jax.numpy as jnp

    x = jnp.arange(1 << 20, dtype=jnp.float32)
    m = jnp.ones((2048, 2048), dtype=jnp.float32)
    y = jax.jit(lambda a, b: (a @ b).sum())(m, m)
    return {
        "devices": [str(d) for d in jax.devices()],
        "platforms": sorted({d.platform for d in jax.devices()}),
        "process_count": jax.process_count(),
        "distributed_initialized": jax.distributed.is_initialized(),
        "sum_x": float(jax.jit(lambda v: (v * 2).sum())(x)),
        "matmul_sum": float(y),
        "x_device": str(x.devices().pop()),
        "jax_version": jax.__version__,
    }


@sky.function
def plain_cuda() -> dict:
    import torch

    a = torch.randn(4096, 4096, device="cuda")
    b = (a @ a.T).trace().item()
    return {
        "cuda_available": torch.cuda.is_available(),
        "device_name": torch.cuda.get_device_name(),
        "tensor_device": str(a.device),
        "trace_finite": b == b,
        "mem_alloc_mb": torch.cuda.memory_allocated() // (1 << 20),
        "torch": torch.__version__,
    }


def check(name, fn):
    start = time.monotonic()
    try:
        out = fn()
        print(f"[{name}] OK in {time.monotonic() - start:.1f}s: {out}", flush=True)
        return True
    except Exception:
        print(f"[{name}] FAILED in {time.monotonic() - start:.1f}s", flush=True)
        traceback.print_exc()
        return False


def a() -> object:
    with sky.Compute(provider=sky.Local(), nodes=1, plugins=[sky.plugins.torch(backend="nccl")],
                     console=False) as pool:
        return nccl_all_reduce_one_rank() @ pool


def a_default() -> object:
    with sky.Compute(provider=sky.Local(), nodes=1, plugins=[sky.plugins.torch()], console=False) as pool:
        return nccl_all_reduce_one_rank() @ pool


def b() -> object:
    image = sky.Image(env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    with sky.Compute(provider=sky.Local(), nodes=1, image=image, plugins=[sky.plugins.jax()],
                     console=False) as pool:
        return jax_on_gpu() @ pool


def c() -> object:
    with sky.Compute(provider=sky.Local(), nodes=1, console=False) as pool:
        return plain_cuda() >> pool


if __name__ == "__main__":
    print("python", sys.version.split()[0], "skyward from", os.path.dirname(sky.__file__), flush=True)
    results = [check("a torch nccl", a), check("a2 torch default backend", a_default),
               check("b jax gpu", b), check("c plain cuda", c)]
    print("ALL OK" if all(results) else "SOME FAILED", flush=True)
    sys.exit(0 if all(results) else 1)
