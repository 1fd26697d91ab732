"""`Plugin`: a frozen bundle of hooks that configures every task of a pool.

A plugin is data, not a class hierarchy: each field is an optional callable, and the `with_*`
builders return new instances so a plugin factory can chain them. The pool turns each plugin in
`plugins=[...]` into hook implementations of the hook catalogue (`skyward.extension.hookspecs`), registered
on its own plugin manager (`skyward.client.hooks`), and each worker does the same with the plugins it is
shipped (`skyward.worker.lifecycle`): the ordering rules live there.
"""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypedDict

import attrs

from skyward.dataclass_view import dataclass_view

if TYPE_CHECKING:  # the hooks' argument types; this module is imported by every worker
    from skyward.bootstrap.ops import Op
    from skyward.client.pool import Pool
    from skyward.image import Image
    from skyward.providers.base import Cluster
    from skyward.spec import Spec
    from skyward.task.instance import InstanceInfo

#: `transform`: the image so far and the pool's cluster -> the next image (None keeps it).
ImageTransform = Callable[["Image", "Cluster"], "Image | None"]
#: `bootstrap`: the cluster -> shell ops every node runs (a plain string is an op named after the plugin).
BootstrapFactory = Callable[["Cluster"], "Sequence[Op | str] | Op | str | None"]
#: `decorate`: the task function -> the function each task calls (arguments and result are the task's).
TaskDecorator = Callable[[Callable[..., Any]], Callable[..., Any]]
#: `around_app`: the worker's place in the pool -> a context held for the worker process's life.
AppLifecycle = Callable[["InstanceInfo"], AbstractContextManager[None]]
#: `around_process`: likewise, for one executor subprocess.
ProcessLifecycle = Callable[["InstanceInfo"], AbstractContextManager[None]]
#: `around_client`: the pool and its cluster -> a context held on the client while the pool is up.
ClientLifecycle = Callable[["Pool", "Cluster"], AbstractContextManager[None]]
#: `workers_per_node`: the pool's spec -> worker processes per node (None means one).
WorkersPerNode = Callable[["Spec"], "int | None"]


@dataclass_view
@attrs.frozen
class LaunchCommand:
    """The worker's launch command, structured so launchers (accelerate, torchrun) can wrap it."""

    launcher: str = ""
    entrypoint: str = ""
    args: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    @classmethod
    def worker(cls, python_bin: str) -> LaunchCommand:
        """The plain worker's command, before any launcher wraps it."""
        return cls(entrypoint=f"{shlex.quote(python_bin)} -m skyward.worker")

    def render(self) -> str:
        return " ".join(part for part in (self.launcher, self.entrypoint, *self.args) if part)


@dataclass_view
@attrs.frozen(kw_only=True)
class LaunchContext:
    """What a launcher transform may use to build its command.

    `rendezvous_port` is the port on the head (`head_addr`) where the node's distributed group meets
    (torch's `MASTER_PORT`, accelerate's `--main_process_port`).
    """

    node_id: int
    num_nodes: int
    head_addr: str
    rendezvous_port: int
    private_ip: str
    python_bin: str
    venv_dir: str
    concurrency: int
    executor: str

    @property
    def casty_port(self) -> int:
        """Deprecated: `rendezvous_port`, under the name a launcher written for it may still read."""
        warnings.warn(
            "LaunchContext.casty_port is deprecated; read LaunchContext.rendezvous_port",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.rendezvous_port


#: `launcher`: the command so far and this node's context -> the next command (None keeps it).
Launcher = Callable[[LaunchCommand, LaunchContext], "LaunchCommand | None"]


class AccelerateConfig(TypedDict, total=False):
    """Accelerate config in the shape of the YAML written by `accelerate config`."""

    distributed_type: str
    mixed_precision: str
    num_processes: int
    num_cpu_threads_per_process: int
    gpu_ids: str
    same_network: bool
    debug: bool
    downcast_bf16: bool
    rdzv_backend: str
    fsdp: dict[str, Any]
    deepspeed: dict[str, Any]


@dataclass_view
@attrs.frozen
class Plugin:
    """Declarative third-party integration bundle (see the module docstring)."""

    name: str
    transform: ImageTransform | None = None
    bootstrap: BootstrapFactory | None = None
    decorate: TaskDecorator | None = None
    around_app: AppLifecycle | None = None
    around_process: ProcessLifecycle | None = None
    around_client: ClientLifecycle | None = None
    launcher: Launcher | None = None
    #: Spec -> worker processes per node (MIG runs one per GPU instance); None means one.
    workers_per_node: WorkersPerNode | None = None

    @staticmethod
    def create(name: str) -> Plugin:
        return Plugin(name=name)

    def with_image_transform(self, transform: ImageTransform) -> Plugin:
        return attrs.evolve(self, transform=transform)

    def with_bootstrap(self, factory: BootstrapFactory) -> Plugin:
        return attrs.evolve(self, bootstrap=factory)

    def with_decorator(self, decorate: TaskDecorator) -> Plugin:
        return attrs.evolve(self, decorate=decorate)

    def with_around_app(self, around: AppLifecycle) -> Plugin:
        return attrs.evolve(self, around_app=around)

    def with_around_process(self, around: ProcessLifecycle) -> Plugin:
        return attrs.evolve(self, around_process=around)

    def with_around_client(self, around: ClientLifecycle) -> Plugin:
        return attrs.evolve(self, around_client=around)

    def with_launcher(self, launcher: Launcher) -> Plugin:
        return attrs.evolve(self, launcher=launcher)

    def with_workers_per_node(self, workers: WorkersPerNode) -> Plugin:
        """Run `workers(spec)` worker processes on every node instead of one."""
        return attrs.evolve(self, workers_per_node=workers)


def around_app(name: str, around: AppLifecycle) -> Plugin:
    return Plugin.create(name).with_around_app(around)


def around_client(name: str, around: ClientLifecycle) -> Plugin:
    return Plugin.create(name).with_around_client(around)


def around_process(name: str, around: ProcessLifecycle) -> Plugin:
    return Plugin.create(name).with_around_process(around)
