"""`sky.plugins.jax()`: install JAX on the workers and join every node into one `jax.distributed` cluster.

Two hooks:

- ``transform`` (client, once per pool) adds the JAX requirement to ``Image.pip``: ``jax[cuda12]``
  for ``cuda="cu12x"``, ``jax[cuda13]`` for ``cuda="cu13x"``, plain ``jax`` for ``cuda="cpu"`` or
  ``None``. JAX's CUDA wheels are on PyPI, so no extra index is needed.
- ``around_app`` (worker, once per worker process, on its first task) sets ``JAX_COORDINATOR_ADDRESS``,
  ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID`` and ``JAX_LOCAL_DEVICE_COUNT`` from the node's
  ``InstanceInfo`` (only the worker knows its own index, so these are not ``Image.env``), then calls
  ``jax.distributed.initialize(...)`` exactly once; on worker shutdown it calls
  ``jax.distributed.shutdown()``. For the CPU build (``cuda="cpu"`` or ``None``) it also sets
  ``JAX_PLATFORMS=cpu`` unless the worker's environment already names the platforms, so a host
  whose interpreter already has a CUDA jaxlib (``sky.Local()``, a GPU box over SSH) still runs the
  CPU cluster that was asked for, instead of every process of the node claiming the same GPU.

The coordinator is node 0 (``InstanceInfo.head_addr``) on port ``head_port + COORDINATOR_PORT_OFFSET``
(``head_port + 1``): ``head_port`` itself is torch's ``MASTER_PORT``, so a pool that lists both the
torch and jax plugins gets two distinct rendezvous ports.

One JAX process per node: ``process_id`` is ``InstanceInfo.node`` and ``num_processes`` is
``InstanceInfo.total_nodes``. ``jax.distributed.initialize`` waits until every process has joined;
the pool's first dispatch sends every worker it does not target an empty task, so every node joins
even when the first task is a single ``fn() >> pool``. Use the default thread executor: with
``Worker(executor="process")`` tasks run in subprocesses that this hook does not initialise.

List ``jax()`` before plugins that use JAX on the worker (``plugins=[sky.plugins.jax(),
sky.plugins.keras(backend="jax")]``): ``around_app`` hooks enter in plugin order, and
``jax.distributed.initialize`` must run before JAX touches a device.

This module imports only skyward-core and the standard library; JAX is imported by the hook, on
the worker.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skyward.errors import ConfigurationError
from skyward.extension.plugin import Plugin

__all__ = ["COORDINATOR_PORT_OFFSET", "distributed_env", "jax", "jax_requirement"]

#: The JAX coordinator listens on ``InstanceInfo.head_port + COORDINATOR_PORT_OFFSET`` on node 0;
#: ``head_port`` itself is torch's ``MASTER_PORT``.
COORDINATOR_PORT_OFFSET = 1

#: CUDA majors JAX publishes wheels for (``jax[cuda12]``, ``jax[cuda13]``).
SUPPORTED_CUDA_MAJORS = ("12", "13")

_CUDA = re.compile(r"^cu(\d{2})\d*$")

# Process-wide: whether this process's jax.distributed was started by this plugin (and so is ours
# to shut down). Guarded, because around_app may be entered from any task thread.
_lock = threading.Lock()
_owned = False


def jax_requirement(cuda: str | None) -> str:
    """The pip requirement for ``cuda``: ``"cu124"`` -> ``"jax[cuda12]"``, ``"cpu"`` -> ``"jax"``."""
    if cuda is None:
        return "jax"
    if not isinstance(cuda, str):
        raise ConfigurationError(
            f"sky.plugins.jax(cuda={cuda!r}): expected a CUDA tag such as \"cu124\" or \"cu130\", "
            'or "cpu" (or None) for the CPU build'
        )
    tag = cuda.strip().lower()
    if tag == "cpu":
        return "jax"
    match = _CUDA.match(tag)
    if match is None or match.group(1) not in SUPPORTED_CUDA_MAJORS:
        raise ConfigurationError(
            f"sky.plugins.jax(cuda={cuda!r}): JAX publishes wheels for CUDA "
            f"{' and '.join(SUPPORTED_CUDA_MAJORS)} only; pass a tag such as \"cu124\" (CUDA 12) or "
            '"cu130" (CUDA 13), or cuda="cpu" for the CPU build'
        )
    return f"jax[cuda{match.group(1)}]"


def coordinator_address(info: Any) -> str:
    """``host:port`` of the coordinator on node 0 (IPv6 hosts are bracketed)."""
    host = info.head_addr
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{info.head_port + COORDINATOR_PORT_OFFSET}"


def distributed_env(info: Any, *, gpu: bool) -> dict[str, str]:
    """The ``JAX_*`` variables for the worker ``info`` describes.

    One JAX process per worker: with several workers on a node (``mig`` gives one per GPU
    instance) the processes are numbered across the pool by ``global_worker_index``, and each
    has its share of the node's GPUs. ``JAX_LOCAL_DEVICE_COUNT`` is that share for a CUDA build
    (at least 1) and 1 for the CPU build, which is JAX's default of one CPU device per process.
    """
    per_node = max(int(getattr(info, "workers_per_node", 1)), 1)
    local_devices = max(int(info.gpu_count) // per_node, 1) if gpu else 1
    return {
        "JAX_COORDINATOR_ADDRESS": coordinator_address(info),
        "JAX_NUM_PROCESSES": str(info.total_nodes * per_node),
        "JAX_PROCESS_ID": str(info.node * per_node + int(getattr(info, "worker", 0))),
        "JAX_LOCAL_DEVICE_COUNT": str(local_devices),
    }


def _transform(requirement: str, image: Any, cluster: Any) -> Any:
    return image.with_pip(requirement)


def _already_initialized(jax_lib: Any) -> bool:
    is_initialized = getattr(jax_lib.distributed, "is_initialized", None)
    if is_initialized is not None:
        return bool(is_initialized())
    from jax._src import distributed  # older JAX without the public helper

    return distributed.global_state.client is not None


def _initialize(env: dict[str, str]) -> bool:
    """Start jax.distributed in this process once; True when this call started it."""
    global _owned
    import jax as jax_lib

    with _lock:
        if _owned or _already_initialized(jax_lib):
            return False
        try:
            jax_lib.distributed.initialize(
                coordinator_address=env["JAX_COORDINATOR_ADDRESS"],
                num_processes=int(env["JAX_NUM_PROCESSES"]),
                process_id=int(env["JAX_PROCESS_ID"]),
            )
        except RuntimeError as exc:
            raise RuntimeError(
                f"jax.distributed.initialize() failed on process {env['JAX_PROCESS_ID']} of "
                f"{env['JAX_NUM_PROCESSES']} (coordinator {env['JAX_COORDINATOR_ADDRESS']}): "
                f"{str(exc).rstrip('. ')}. "
                "It must run before JAX touches a device: list sky.plugins.jax() before plugins that "
                "use JAX (e.g. sky.plugins.keras), and use no JAX before the first task."
            ) from exc
        _owned = True
        return True


def _shutdown() -> None:
    global _owned
    import jax as jax_lib

    with _lock:
        if not _owned:
            return
        _owned = False
        jax_lib.distributed.shutdown()


def _pin_cpu() -> None:
    """Keep JAX on the CPU, as the CPU build would, unless ``JAX_PLATFORMS`` is already set.

    JAX reads ``JAX_PLATFORMS`` when it is imported, so a JAX imported before this hook (by the
    task's arguments, say) is told through its config as well; both act before the first backend
    is created, which ``jax.distributed.initialize`` must precede anyway.
    """
    if os.environ.get("JAX_PLATFORMS"):
        return
    os.environ["JAX_PLATFORMS"] = "cpu"
    loaded = sys.modules.get("jax")
    if loaded is not None and hasattr(loaded, "config"):
        loaded.config.update("jax_platforms", "cpu")


@contextmanager
def _around_app(gpu: bool, info: Any) -> Iterator[None]:
    env = distributed_env(info, gpu=gpu)
    os.environ.update(env)
    if not gpu:
        _pin_cpu()
    started = _initialize(env)
    try:
        # Create the backend here, while every process is in this hook at once: in a cluster its
        # creation is itself a collective (the processes exchange their devices), so a process
        # that first touched JAX in a task sent to it alone would wait for the others for ever.
        import jax as jax_lib

        jax_lib.devices()
        yield
    finally:
        if started:
            _shutdown()


def jax(*, cuda: str | None = "cu124") -> Plugin:
    """JAX on every worker, with ``jax.distributed`` initialised across the pool's nodes.

    Parameters
    ----------
    cuda
        CUDA tag of the JAX build: ``"cu12x"`` installs ``jax[cuda12]``, ``"cu13x"`` installs
        ``jax[cuda13]``, ``"cpu"`` or ``None`` installs the CPU build (``jax``).

    Inside a task, ``jax.process_count()`` is the number of nodes, ``jax.process_index()`` is the
    node's index, and ``jax.devices()`` lists every node's devices.
    """
    requirement = jax_requirement(cuda)
    gpu = requirement != "jax"
    return (
        Plugin.create("jax")
        .with_image_transform(functools.partial(_transform, requirement))
        .with_around_app(functools.partial(_around_app, gpu))
    )
