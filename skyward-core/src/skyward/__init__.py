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

from typing import Any

from skyward import accelerators, plugins
from skyward import time as time
from skyward.client.pool import Pool
from skyward.client.session import MultiPool, Session, pool
from skyward.errors import (
    BootstrapFailed,
    ConfigurationError,
    MissingPackageError,
    NodeLostError,
    NoActivePoolError,
    PluginError,
    PoolClosedError,
    RemoteError,
    SerializationError,
    SkywardError,
)
from skyward.events import (
    BootstrapCommand,
    BootstrapConsole,
    BootstrapError,
    BootstrapPhase,
    BootstrapRequested,
    ClusterDestroyed,
    ClusterProvisioned,
    ClusterReady,
    ClusterRequested,
    Error,
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
    ShutdownRequested,
    TaskCompleted,
    TaskRetried,
    TaskStarted,
)
from skyward.function import PendingFunction, PendingFunctionGroup, RemoteFunction, function, gather
from skyward.image import DEFAULT_IMAGE, Image, PipIndex
from skyward.instance import AcceleratorInfo, InstanceInfo, NetworkInfo, PeerInfo
from skyward.options import LogConfig, Options, Worker
from skyward.output import CallbackWriter, redirect_output, silent, stderr, stdout
from skyward.plugin import Plugin
from skyward.providers.local import Local
from skyward.runtime import instance_info, is_head
from skyward.sharding import DistributedSampler, shard
from skyward.spec import Nodes, S3Volume, Spec, Volume

#: The pool context manager (the newer name); `ComputePool` is the older one.
Compute = Pool
ComputePool = Pool
#: Older names kept as aliases.
compute = function
PendingCompute = PendingFunction
Metrics = Metric

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """Provider classes from other distributions (`sky.AWS`, `sky.RunPod`) resolve on first use."""
    if name.startswith("__") or not name[:1].isupper():
        raise AttributeError(f"module 'skyward' has no attribute {name!r}")
    from skyward.registry import KNOWN_PROVIDER_PACKAGES, provider_class, providers

    if name in KNOWN_PROVIDER_PACKAGES or name in providers():
        return provider_class(name)
    raise AttributeError(f"module 'skyward' has no attribute {name!r}")


__all__ = [
    "DEFAULT_IMAGE", "AcceleratorInfo", "BootstrapCommand", "BootstrapConsole", "BootstrapError",
    "BootstrapFailed", "BootstrapPhase", "BootstrapRequested", "CallbackWriter", "ClusterDestroyed",
    "ClusterProvisioned", "ClusterReady", "ClusterRequested", "Compute", "ComputePool", "ConfigurationError",
    "DistributedSampler", "Error", "Event", "Image", "InstanceBootstrapped", "InstanceDestroyed", "InstanceInfo",
    "InstanceLaunched", "InstancePreempted", "InstanceProvisioned", "InstanceReplaced", "InstanceRequested",
    "InstanceRunning", "Local", "Log", "LogConfig", "Metric", "Metrics", "MissingPackageError", "MultiPool", "NetworkInfo",
    "NoActivePoolError", "NodeLost", "NodeLostError", "NodeReady", "Nodes", "Options", "PeerInfo",
    "PendingCompute", "PendingFunction", "PendingFunctionGroup", "PipIndex", "Plugin", "PluginError", "Pool",
    "PoolClosedError", "RemoteError", "RemoteFunction", "S3Volume", "SerializationError", "Session",
    "ShutdownRequested", "SkywardError", "Spec", "TaskCompleted", "TaskRetried", "TaskStarted", "Volume",
    "Worker", "accelerators", "plugins", "compute", "function", "gather", "instance_info", "is_head", "pool",
    "redirect_output", "shard", "silent", "stderr", "stdout", "time",
]
