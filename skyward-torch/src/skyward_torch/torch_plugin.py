"""`sky.plugins.torch()`: PyTorch on the workers, with the default process group already formed.

Two hooks:

- ``transform`` adds ``torch`` (and optionally ``torchvision``/``torchaudio``) to the image's pip
  packages, and routes exactly those packages to PyTorch's wheel index for the chosen CUDA build
  (``https://download.pytorch.org/whl/<cuda>``; ``cuda="cpu"`` is the CPU-only index).
- ``around_app`` runs once per worker process, lazily on its first task (see
  ``skyward.worker.lifecycle``): it exports the ``torch.distributed`` environment variables and
  calls ``init_process_group(init_method="env://")``, then destroys the group when the worker
  shuts down.

Topology, from the worker's ``InstanceInfo``:

- ``MASTER_ADDR``      = ``info.head_addr``            (the head node's private address)
- ``MASTER_PORT``      = ``str(info.head_port)``       (the rendezvous port on the head node)
- ``WORLD_SIZE``       = ``info.total_workers``        (nodes x workers per node)
- ``RANK``             = ``info.global_worker_index``  (``node * workers_per_node + worker``)
- ``LOCAL_RANK``       = ``info.worker``               (this worker's index on its node)
- ``LOCAL_WORLD_SIZE`` = ``info.workers_per_node``     (workers on each node)

When the worker was started by a process launcher that already exported the topology (the
``accelerate`` plugin runs it under ``torch.distributed.run``, which sets ``TORCHELASTIC_RUN_ID``),
the launcher's values are kept: it may have started several processes per node, which only it
knows how to number.

``init_process_group`` is a collective: every rank blocks in it until all have arrived. The group
forms on the first task each worker runs, and the pool's first dispatch sends every worker it does
not target an empty task, so all ranks arrive even when the first task is a lone ``>>``.

User code written for ``torchrun`` that forms or destroys the default group itself runs unchanged:
for the context's lifetime ``torch.distributed.init_process_group`` and ``destroy_process_group``
leave the plugin's group alone (`skyward_torch.group_patch`, one of Skyward's fast paths).

Limits: one process per worker is assumed (``WORLD_SIZE`` counts workers; the pool starts one
worker process per node today), and tasks must run under the default ``thread`` executor: under
``executor="process"`` they run in subprocesses that are not members of the group.

Nothing here imports torch until a hook runs on a worker, so the client needs no torch.
"""

from __future__ import annotations

import datetime
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skyward.errors import ConfigurationError
from skyward.extension.plugin import Plugin
from skyward.image import Image, PipIndex
from skyward_torch.group_patch import default_group_owned

__all__ = ["TORCH_INDEX", "distributed_env", "torch", "wheel_packages"]

#: PyTorch's wheel index; the CUDA build (``cu128``, ``cpu``, ...) is the last path segment.
TORCH_INDEX = "https://download.pytorch.org/whl"
#: The CUDA builds PyTorch's index publishes, oldest first; ``cuda="auto"`` picks among them.
TORCH_CUDA_BUILDS = ("11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0")
#: ``cuda="auto"`` where the base image says nothing of its CUDA.
DEFAULT_CUDA_BUILD = "cu128"
#: The provider config fields that name a node's base image (RunPod, Vast.ai, Novita).
_IMAGE_FIELDS = ("container_image", "docker_image")


def cuda_build(cluster: Any) -> str:
    """``cuda="auto"``: the newest build of PyTorch's index no newer than the CUDA of the pool's base
    image (a driver runs wheels built for its CUDA or older), ``DEFAULT_CUDA_BUILD`` when the
    image does not say (`skyward.containers.cuda_of`) or the provider runs no container."""
    from skyward.containers import cuda_of

    config = getattr(getattr(cluster, "spec", None), "provider", None)
    image = next((getattr(config, f) for f in _IMAGE_FIELDS if getattr(config, f, None) is not None), None)
    version = cuda_of(image) if image is not None else None
    if version is None:
        return DEFAULT_CUDA_BUILD

    def as_tuple(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))

    fitting = [build for build in TORCH_CUDA_BUILDS if as_tuple(build) <= as_tuple(version)]
    return f"cu{(fitting[-1] if fitting else TORCH_CUDA_BUILDS[0]).replace('.', '')}"

#: Environment variables the process group is formed from (``init_method="env://"``).
TOPOLOGY_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE")

_SPECIFIER_START = ("=", "<", ">", "!", "~")


def _requirement(name: str, version: str | bool | None, option: str) -> str | None:
    """``torchvision`` for True/"latest", ``torchvision==0.20.0`` for "0.20.0", as given for ">=0.20"."""
    if version is None or version is False:
        return None
    if version is True or version == "latest":
        return name
    if not isinstance(version, str) or not version.strip():
        raise ConfigurationError(
            f"torch({option}={version!r}): expected True, 'latest' or a version string such as '2.6.0'"
        )
    version = version.strip()
    return f"{name}{version}" if version.startswith(_SPECIFIER_START) else f"{name}=={version}"


def wheel_packages(
    version: str = "latest", vision: str | bool | None = None, audio: str | bool | None = None
) -> tuple[str, ...]:
    """The pip requirements the plugin adds, in order: torch, then torchvision, then torchaudio."""
    if not isinstance(version, str):
        raise ConfigurationError(f"torch(version={version!r}): expected 'latest' or a version like '2.6.0'")
    found = (
        _requirement("torch", version, "version"),
        _requirement("torchvision", vision, "vision"),
        _requirement("torchaudio", audio, "audio"),
    )
    return tuple(req for req in found if req is not None)


def _package_name(requirement: str) -> str:
    for index, char in enumerate(requirement):
        if char in _SPECIFIER_START:
            return requirement[:index]
    return requirement


def distributed_env(info: Any) -> dict[str, str]:
    """The ``torch.distributed`` topology of the worker ``info`` describes (see the module docstring)."""
    return {
        "MASTER_ADDR": str(info.head_addr),
        "MASTER_PORT": str(info.head_port),
        "WORLD_SIZE": str(info.total_workers),
        "RANK": str(info.global_worker_index),
        "LOCAL_RANK": str(info.worker),
        "LOCAL_WORLD_SIZE": str(info.workers_per_node),
    }


@contextmanager
def _set_env(values: dict[str, str]) -> Iterator[None]:
    """Export ``values``; on exit put back what was there before (or remove what was not)."""
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def torch(
    *,
    backend: str | None = None,
    cuda: str = "auto",
    version: str = "latest",
    vision: str | bool | None = None,
    audio: str | bool | None = None,
    timeout: float | None = None,
) -> Plugin:
    """PyTorch with its CUDA wheel index, and a ``torch.distributed`` process group on every worker.

    Parameters
    ----------
    backend
        Process group backend; ``None`` picks ``"nccl"`` where CUDA is available and ``"gloo"``
        otherwise (decided on the worker).
    cuda
        The wheel build on PyTorch's index: ``"cu128"``, ``"cu126"``, ..., or ``"cpu"``; ``"auto"``
        (the default) follows the CUDA of the provider's base image (``RunPod(container_image=
        sky.containers.cuda("12.6"))`` gives ``cu126``) and is ``cu128`` where none is known.
    version
        ``"latest"`` (unpinned), a version (``"2.6.0"`` -> ``torch==2.6.0``) or a specifier
        (``">=2.5"``).
    vision, audio
        Also install torchvision / torchaudio: ``True`` or ``"latest"`` unpinned, or a version as
        for ``version``.
    timeout
        Seconds for the rendezvous and for collectives (``init_process_group(timeout=...)``);
        ``None`` keeps torch's default.
    """
    _check_arguments(backend, cuda, timeout)
    requirements = wheel_packages(version, vision, audio)
    names = tuple(_package_name(requirement) for requirement in requirements)

    def transform(image: Image, cluster: Any) -> Image:
        build = cuda_build(cluster) if cuda.strip() == "auto" else cuda.strip()
        index = PipIndex(url=f"{TORCH_INDEX}/{build}", packages=names)
        return image.with_pip(*requirements).with_pip_index(index)

    around_app = functools.partial(_process_group, backend, timeout)
    return Plugin.create("torch").with_image_transform(transform).with_around_app(around_app)


def _check_arguments(backend: str | None, cuda: str, timeout: float | None) -> None:
    """Refuse, when the plugin is built, what would only fail on the workers."""
    if not isinstance(cuda, str) or not cuda.strip() or "/" in cuda:
        raise ConfigurationError(f"torch(cuda={cuda!r}): expected a wheel build such as 'cu128' or 'cpu'")
    if backend is not None and (not isinstance(backend, str) or not backend.strip()):
        raise ConfigurationError(f"torch(backend={backend!r}): expected 'nccl', 'gloo' or None (automatic)")
    bad_timeout = isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    if timeout is not None and bad_timeout:
        raise ConfigurationError(f"torch(timeout={timeout!r}): expected a positive number of seconds or None")


@contextmanager
def _process_group(backend: str | None, timeout: float | None, info: Any) -> Iterator[None]:
    """The ``around_app`` hook: the worker's default process group, formed from its topology (or the
    launcher's), owned by the plugin for the worker's life and destroyed at its end."""
    import torch as _torch
    import torch.distributed as dist

    if os.environ.get("TORCHELASTIC_RUN_ID") and all(name in os.environ for name in TOPOLOGY_VARIABLES):
        topology: dict[str, str] = {}  # a launcher (torchrun, accelerate) numbered this process
    else:
        topology = distributed_env(info)
    chosen = backend or ("nccl" if _torch.cuda.is_available() else "gloo")
    destroy = dist.destroy_process_group  # the real one, whatever the wrapper does
    with _set_env(topology):
        created = False
        if not dist.is_initialized():
            options: dict[str, Any] = {"backend": chosen, "init_method": "env://"}
            if timeout is not None:
                options["timeout"] = datetime.timedelta(seconds=timeout)
            dist.init_process_group(**options)
            created = True
        try:
            with default_group_owned(dist):
                yield
        finally:
            if created and dist.is_initialized():
                destroy()
