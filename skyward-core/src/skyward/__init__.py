"""Skyward: ephemeral distributed compute for ML.

Write an ordinary function, mark it `@sky.function`, open a pool and dispatch with an operator:

    import skyward as sky

    @sky.function
    def add(a, b):
        return a + b

    with sky.Compute(provider=sky.Local(), nodes=2) as pool:
        add(2, 3) >> pool          # one node
        add(2, 3) @ pool           # every node
        (add(1, 2) & add(3, 4)) >> pool

This module is the whole public surface; everything else may change.
"""

from __future__ import annotations

import builtins
import copyreg
import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# The public names resolve on first use (PEP 562), so `python -m skyward.worker` and the node's
# keeper, which import this package first, pay for none of the client (asyncio, structlog, rich,
# the event classes) nor the decorator's attrs and cloudpickle: a node's process starts in a
# fraction of the time.
from skyward._version import __version__ as __version__


class _Package(types.ModuleType):
    """This package's module type: `sky.function` stays the decorator. Importing the submodule
    of the same name (`skyward.function`) would otherwise bind the module over it, as the import
    system binds every submodule on its package; that binding is dropped, and `__getattr__`
    answers the decorator."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "function" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


def _import_again(package: _Package) -> tuple[Any, tuple[str]]:
    """A task that uses `sky` ships it as cloudpickle ships any module: by name, imported again
    on the worker (cloudpickle knows `ModuleType` itself, not its subclasses)."""
    return importlib.import_module, (package.__name__,)


copyreg.pickle(_Package, _import_again)
sys.modules[__name__].__class__ = _Package

_EXPORTS: dict[str, tuple[str, ...]] = {
    "skyward.function": ("PendingFunction", "PendingFunctionGroup", "RemoteFunction", "function", "gather"),
    "skyward.client.planning": ("plan",),
    "skyward.client.pool": ("Pool",),
    "skyward.client.session": ("MultiPool", "Session", "pool"),
    "skyward.errors": (
        "BootstrapFailed", "CapacityError", "ConfigurationError", "HostKeyError", "MissingPackageError",
        "NoActivePoolError", "NodeLostError", "NoOffersError", "PluginError", "PoolClosedError",
        "ProvisionError", "ProvisioningError", "RemoteError", "SerializationError", "SkywardError",
        "TaskProcessError",
    ),
    "skyward.observe.events": (
        "BootstrapCommand", "BootstrapConsole", "BootstrapError", "BootstrapPhase", "BootstrapPhaseFailed",
        "BootstrapRequested", "ClusterDestroyed", "ClusterProvisioned", "ClusterReady", "ClusterRequested",
        "Error", "ErrorReported", "Event",
        "InstanceBootstrapped", "InstanceDestroyed", "InstanceLaunched", "InstancePreempted",
        "InstanceProvisioned", "InstanceReplaced", "InstanceRequested", "InstanceRunning", "Log", "Metric",
        "NodeLost", "NodeReady", "PoolResized", "ShutdownRequested", "SpecSkipped", "TaskCompleted",
        "TaskRetried", "TaskStarted",
    ),
    "skyward.image": ("DEFAULT_IMAGE", "Image", "PipIndex"),
    "skyward.market.api": ("offers", "offers_async"),
    "skyward.market.offer": ("Offer",),
    "skyward.storage.client": ("Storage",),
    "skyward.health": ("HealthChecker",),
    "skyward.containers": ("DockerImage",),
    "skyward.task.instance": ("AcceleratorInfo", "InstanceInfo", "NetworkInfo", "PeerInfo"),
    "skyward.options": ("LogConfig", "Options", "SelectionStrategy", "Worker", "WorkerExecutor"),
    "skyward.task.output": ("CallbackWriter", "redirect_output", "silent", "stderr", "stdout"),
    "skyward.extension.plugin": ("Plugin",),
    "skyward.providers.local": ("Local",),
    "skyward.task.runtime": ("instance_info", "is_head"),
    "skyward.task.sharding": ("DistributedSampler", "shard"),
    "skyward.spec": ("AllocationStrategy", "Nodes", "S3Volume", "Spec", "Volume"),
    # sky.dict and sky.set are cached here as globals `dict` and `set`: no code below calls those
    # builtins.
    "skyward.collections": (
        "BarrierBrokenError", "LockTimeoutError", "QueueEmptyError", "barrier", "counter", "dict", "lock",
        "queue", "set",
    ),
}
#: Subpackages and modules that are public attributes.
_MODULES = ("accelerators", "containers", "metrics", "plugins", "storage", "time")
#: Other names for the same objects: the newer `Compute` and the older names kept as aliases.
_ALIASES = {
    "Compute": "Pool", "ComputePool": "Pool", "PendingCompute": "PendingFunction", "Metrics": "Metric",
    "compute": "function",  # the older name of the decorator
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

if TYPE_CHECKING:
    from skyward import accelerators, containers, metrics, plugins, storage
    from skyward import time as time
    from skyward.client.planning import plan
    from skyward.client.pool import Pool
    from skyward.client.session import MultiPool, Session, pool
    from skyward.collections import (  # (dict and set: not to shadow the builtins)
        barrier,
        counter,
        lock,
        queue,
    )
    from skyward.containers import DockerImage
    from skyward.errors import (
        BootstrapFailed,
        CapacityError,
        ConfigurationError,
        HostKeyError,
        MissingPackageError,
        NoActivePoolError,
        NodeLostError,
        NoOffersError,
        PluginError,
        PoolClosedError,
        ProvisionError,
        ProvisioningError,
        RemoteError,
        SerializationError,
        SkywardError,
        TaskProcessError,
    )
    from skyward.extension.plugin import Plugin
    from skyward.function import PendingFunction, PendingFunctionGroup, RemoteFunction, function, gather
    from skyward.health import HealthChecker
    from skyward.image import DEFAULT_IMAGE, Image, PipIndex
    from skyward.market.api import offers, offers_async
    from skyward.market.offer import Offer
    from skyward.observe.events import (
        BootstrapCommand,
        BootstrapConsole,
        BootstrapError,
        BootstrapPhase,
        BootstrapPhaseFailed,
        BootstrapRequested,
        ClusterDestroyed,
        ClusterProvisioned,
        ClusterReady,
        ClusterRequested,
        Error,
        ErrorReported,
        Event,
        InstanceBootstrapped,
        InstanceDestroyed,
        InstanceLaunched,
        InstancePreempted,
        InstanceProvisioned,
        InstanceReplaced,
        InstanceRequested,
        InstanceRunning,
        Log,
        Metric,
        NodeLost,
        NodeReady,
        PoolResized,
        ShutdownRequested,
        SpecSkipped,
        TaskCompleted,
        TaskRetried,
        TaskStarted,
    )
    from skyward.options import LogConfig, Options, SelectionStrategy, Worker, WorkerExecutor
    from skyward.providers.local import Local
    from skyward.spec import AllocationStrategy, Nodes, S3Volume, Spec, Volume
    from skyward.storage.client import Storage
    from skyward.task.instance import AcceleratorInfo, InstanceInfo, NetworkInfo, PeerInfo
    from skyward.task.output import CallbackWriter, redirect_output, silent, stderr, stdout
    from skyward.task.runtime import instance_info, is_head
    from skyward.task.sharding import DistributedSampler, shard

    Compute = Pool
    ComputePool = Pool
    PendingCompute = PendingFunction
    Metrics = Metric
    compute = function



def __getattr__(name: str) -> Any:
    """Public names on first use; provider classes from other distributions (`sky.AWS`, `sky.RunPod`)."""
    target = _ALIASES.get(name, name)
    module = _WHERE.get(target)
    if target in globals():
        value = globals()[target]
    elif module is not None:
        value = getattr(importlib.import_module(module), target)
    elif name in _MODULES:
        value = importlib.import_module(f"skyward.{name}")
    else:
        return _provider_class(name)  # not kept: a package installed later (and refreshed) wins
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(builtins.set(globals()) | builtins.set(__all__))  # `set` may be sky.set by now


def _provider_class(name: str) -> Any:
    """The provider config class `name` from its distribution. A provider Skyward knows whose
    package is missing (`sky.RunPod` without skyward-runpod) is a stand-in that takes any settings
    (`UninstalledProvider`): a script that names several providers still builds, a pool with
    several specs skips that one, and a pool with it alone raises `MissingPackageError` naming
    the pip command when it starts."""
    if name.startswith("__") or not name[:1].isupper():
        raise AttributeError(f"module 'skyward' has no attribute {name!r}")
    from skyward.errors import MissingPackageError
    from skyward.extension.registry import KNOWN_PROVIDER_PACKAGES, provider_class, providers

    if name in KNOWN_PROVIDER_PACKAGES or name in providers():
        try:
            return provider_class(name)
        except MissingPackageError as error:
            if name not in KNOWN_PROVIDER_PACKAGES:
                raise
            from skyward.providers.credentials import uninstalled_provider

            return uninstalled_provider(name, KNOWN_PROVIDER_PACKAGES[name], str(error))
    raise AttributeError(f"module 'skyward' has no attribute {name!r}")


__all__ = [
    "DEFAULT_IMAGE", "AcceleratorInfo", "BootstrapCommand", "BootstrapConsole", "BootstrapError",
    "BootstrapFailed", "BootstrapPhase", "BootstrapPhaseFailed", "BootstrapRequested", "CallbackWriter",
    "ClusterDestroyed",
    "CapacityError", "ClusterProvisioned", "ClusterReady", "ClusterRequested", "Compute", "ComputePool",
    "ConfigurationError", "DistributedSampler", "DockerImage", "Error", "ErrorReported", "Event",
    "HealthChecker",
    "HostKeyError", "Image", "InstanceBootstrapped", "InstanceDestroyed", "InstanceInfo",
    "InstanceLaunched", "InstancePreempted", "InstanceProvisioned", "InstanceReplaced",
    "InstanceRequested", "InstanceRunning", "Local", "Log", "LogConfig", "Metric", "Metrics",
    "MissingPackageError", "MultiPool", "NetworkInfo", "NoActivePoolError", "NodeLost", "NodeLostError",
    "NodeReady", "Nodes", "Options", "PeerInfo", "PendingCompute", "PendingFunction",
    "PendingFunctionGroup", "PipIndex", "Plugin", "PluginError", "Pool", "PoolClosedError",
    "PoolResized", "ProvisionError", "RemoteError", "RemoteFunction", "S3Volume", "SerializationError",
    "Session", "ShutdownRequested", "SkywardError", "Spec", "TaskCompleted", "TaskProcessError",
    "TaskRetried", "TaskStarted", "Volume", "Worker", "accelerators", "containers", "metrics",
    "plugins", "compute", "function", "gather", "instance_info", "is_head", "offers", "offers_async",
    "plan", "pool", "redirect_output", "shard", "silent", "stderr", "stdout", "storage", "time",
    "BarrierBrokenError", "LockTimeoutError", "QueueEmptyError", "barrier", "counter", "lock", "queue",
    "AllocationStrategy", "NoOffersError", "Offer", "ProvisioningError", "SelectionStrategy", "SpecSkipped",
    "Storage", "WorkerExecutor",
]
