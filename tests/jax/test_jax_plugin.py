"""`sky.plugins.jax()`: the image it asks for, and real `jax.distributed` clusters of Local workers.

The pool tests run CPU JAX in worker processes on this machine: each node is one JAX process, and
node 0 hosts the coordinator on `head_port + 1`.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import cloudpickle
import pytest

import skyward as sky
import skyward_jax
import skyward_jax.hooks
from skyward.client.hooks import PoolHooks
from skyward.errors import ConfigurationError
from skyward.extension import registry
from skyward.image import Image
from skyward.task.instance import InstanceInfo
from skyward_jax import jax_plugin

# Test modules are not importable on a worker, so this one travels by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def local_pool(nodes: int, **kwargs: object) -> sky.Pool:
    return sky.Compute(provider=sky.Local(), nodes=nodes, console=False, logging=False, **kwargs)


# --- the factory and its image ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cuda", "requirement"),
    [
        ("cu121", "jax[cuda12]"),
        ("cu124", "jax[cuda12]"),
        ("cu128", "jax[cuda12]"),
        ("cu12", "jax[cuda12]"),
        ("cu130", "jax[cuda13]"),
        ("CU126", "jax[cuda12]"),
        ("cpu", "jax"),
        (None, "jax"),
    ],
)
def test_cuda_tag_picks_the_jax_requirement(cuda: str | None, requirement: str) -> None:
    assert jax_plugin.jax_requirement(cuda) == requirement


@pytest.mark.parametrize("cuda", ["cu118", "cuda12", "12.4", "gpu", "", 124])
def test_unsupported_cuda_tag_fails_at_construction(cuda: object) -> None:
    with pytest.raises(ConfigurationError, match=r"sky\.plugins\.jax\(cuda=.*cu124"):
        sky.plugins.jax(cuda=cuda)


def test_transform_adds_only_the_jax_requirement() -> None:
    base = Image(pip=["numpy"], env={"HF_HOME": "/data"})
    plugin = sky.plugins.jax(cuda="cpu")
    assert plugin.name == "jax"
    assert plugin.transform(base, None) == Image(pip=["numpy", "jax"], env={"HF_HOME": "/data"})


def test_default_is_cuda_12() -> None:
    assert sky.plugins.jax().transform(Image(), None) == Image(pip=["jax[cuda12]"])
    assert sky.plugins.jax(cuda="cu130").transform(Image(), None) == Image(pip=["jax[cuda13]"])


def test_pool_hooks_fold_the_transform_and_ship_the_plugin_to_workers() -> None:
    plugin = sky.plugins.jax(cuda="cpu")
    hooks = PoolHooks((plugin,))
    assert hooks.transform_image(Image(pip=["jax"]), None) == Image(pip=["jax"])  # not repeated
    assert hooks.worker_plugins() == (plugin,)
    assert plugin.around_app is not None and plugin.decorate is None


def test_distributed_env_comes_from_instance_info() -> None:
    info = InstanceInfo(node=2, total_nodes=3, head_addr="10.0.0.5", head_port=29500, gpu_count=4)
    assert jax_plugin.distributed_env(info, gpu=True) == {
        "JAX_COORDINATOR_ADDRESS": "10.0.0.5:29501",  # head_port is torch's MASTER_PORT
        "JAX_NUM_PROCESSES": "3",
        "JAX_PROCESS_ID": "2",
        "JAX_LOCAL_DEVICE_COUNT": "4",
    }
    assert jax_plugin.distributed_env(info, gpu=False)["JAX_LOCAL_DEVICE_COUNT"] == "1"


def test_distributed_env_numbers_one_process_per_worker_when_a_node_has_several() -> None:
    # mig: two workers on each of two nodes, one GPU instance each.
    envs = [
        jax_plugin.distributed_env(
            InstanceInfo(node=node, worker=worker, workers_per_node=2, total_nodes=2, head_addr="10.0.0.5",
                         head_port=29500, gpu_count=2),
            gpu=True,
        )
        for node in (0, 1) for worker in (0, 1)
    ]
    assert [env["JAX_PROCESS_ID"] for env in envs] == ["0", "1", "2", "3"]
    assert {env["JAX_NUM_PROCESSES"] for env in envs} == {"4"}
    assert {env["JAX_LOCAL_DEVICE_COUNT"] for env in envs} == {"1"}


def test_coordinator_address_brackets_ipv6() -> None:
    info = InstanceInfo(node=0, total_nodes=2, head_addr="fd00::1", head_port=4000)
    assert jax_plugin.coordinator_address(info) == "[fd00::1]:4001"


def test_sky_plugins_jax_resolves_through_the_skyward_jax_entry_point() -> None:
    (ep,) = [e for e in importlib.metadata.entry_points(group="skyward") if e.name == "jax"]
    assert ep.value == "skyward_jax.hooks"
    assert ep.dist is not None and ep.dist.name == "skyward-jax"
    assert registry.plugin_manager().get_plugin("skyward-jax:jax") is skyward_jax.hooks
    assert sky.plugins.jax is jax_plugin.jax is skyward_jax.jax


def test_building_the_plugin_imports_no_jax() -> None:
    code = (
        "import sys, skyward as sky; p = sky.plugins.jax(cuda='cpu'); p.transform(sky.Image(), None); "
        "print('jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


# --- real clusters ------------------------------------------------------------------------------


@sky.function
def jax_topology() -> dict[str, object]:
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    info = sky.instance_info()
    # A collective over every process: only a working cluster can answer it.
    nodes = multihost_utils.process_allgather(np.asarray([info.node]), tiled=True)
    return {
        "node": info.node,
        "pid": os.getpid(),
        "initialized": jax.distributed.is_initialized(),
        "process_count": jax.process_count(),
        "process_index": jax.process_index(),
        "devices": len(jax.devices()),
        "local_devices": jax.local_device_count(),
        "allgather": [int(n) for n in nodes],
        "env": {k: os.environ[k] for k in jax_plugin.distributed_env(info, gpu=False)},
        "head_port": info.head_port,
    }


def test_every_node_joins_one_jax_cluster() -> None:
    with local_pool(2, plugins=[sky.plugins.jax(cuda="cpu")]) as pool:
        first = jax_topology() @ pool
        again = jax_topology() @ pool  # around_app ran once: no second initialize

    assert [r["node"] for r in first] == [0, 1]
    for node, result in enumerate(first):
        assert result["initialized"] is True
        assert result["process_count"] == 2
        assert result["process_index"] == node
        assert result["devices"] == 2 and result["local_devices"] == 1
        assert result["allgather"] == [0, 1]
        assert result["env"] == {
            "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{result['head_port'] + 1}",
            "JAX_NUM_PROCESSES": "2",
            "JAX_PROCESS_ID": str(node),
            "JAX_LOCAL_DEVICE_COUNT": "1",
        }
    assert [r["pid"] for r in again] == [r["pid"] for r in first]
    assert [r["process_index"] for r in again] == [0, 1]


@sky.function
def single_process_topology() -> tuple[int, int]:
    import jax

    return jax.process_count(), jax.process_index()


def test_a_single_node_pool_is_a_one_process_cluster() -> None:
    with local_pool(1, plugins=[sky.plugins.jax(cuda=None)]) as pool:
        assert (single_process_topology() >> pool) == (1, 0)


def test_a_first_task_on_one_node_still_joins_every_node_into_the_cluster() -> None:
    # jax.distributed.initialize waits for every process: a lone first task used to wait there
    # for a node that never joined.
    with local_pool(2, plugins=[sky.plugins.jax(cuda="cpu")]) as pool:
        assert pool.run(single_process_topology(), target=1) == (2, 1)
        assert [r["allgather"] for r in jax_topology() @ pool] == [[0, 1], [0, 1]]


# --- GPU ----------------------------------------------------------------------------------------


def _cuda_devices_visible_to_jax() -> int:
    """GPUs JAX sees, asked in a child process so this one never grabs GPU memory."""
    code = "import jax\ntry:\n    print(len(jax.devices('gpu')))\nexcept RuntimeError:\n    print(0)"
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0
    lines = out.stdout.strip().splitlines()
    return int(lines[-1]) if out.returncode == 0 and lines and lines[-1].isdigit() else 0


@sky.function
def gpu_probe() -> dict[str, object]:
    import jax
    import jax.numpy as jnp

    x = jnp.arange(1024.0)
    return {
        "platforms": sorted({d.platform for d in jax.devices()}),
        "process_count": jax.process_count(),
        "sum": float(jax.jit(lambda v: (v * 2).sum())(x)),
        "device": str(x.devices().pop().platform),
    }


@pytest.mark.gpu
def test_jax_plugin_on_a_cuda_gpu() -> None:
    if _cuda_devices_visible_to_jax() == 0:
        pytest.skip("no CUDA device is visible to JAX here")
    image = sky.Image(env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    # One node: two JAX processes on the same GPUs would claim the same devices.
    with local_pool(1, image=image, plugins=[sky.plugins.jax(cuda="cu124")]) as pool:
        result = gpu_probe() >> pool
    assert result["platforms"] == ["gpu"]
    assert result["device"] == "gpu"
    assert result["process_count"] == 1
    assert result["sum"] == float(2 * sum(range(1024)))
