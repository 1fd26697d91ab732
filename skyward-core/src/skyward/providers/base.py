"""The provider contract: offers -> prepare -> provision -> connect -> terminate -> teardown.

A provider *config* (`sky.Local()`, `sky.AWS(...)`) is a frozen value the user writes; `create()`
turns it into a `Provider`, the object that does the work on the pool's event loop. Clouds hand
back SSH-reachable `Instance`s; Local hands back processes on this machine.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward.transport.base import Channel


@attrs.frozen(kw_only=True)
class Instance:
    """A machine (or, for Local, a process slot) that will run one node's worker."""

    id: str
    node: int
    public_ip: str = "127.0.0.1"
    private_ip: str = "127.0.0.1"
    ssh_user: str = ""
    ssh_port: int = 22
    host_key: str = ""
    hourly_rate: float = 0.0
    on_demand_rate: float = 0.0
    spot: bool = False
    instance_type: str = ""
    vcpus: int = 0
    memory_gb: float = 0.0


@attrs.frozen(kw_only=True)
class Cluster:
    """What `prepare` returns: the pool's identity and whatever the provider needs later."""

    id: str
    provider: str
    spec: Any
    head_port: int = 29500
    state: dict[str, Any] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class NodeSetup:
    """Everything a provider needs to turn an instance into a running worker.

    `ops` are the plugins' bootstrap ops (appended after the image phases); `emit` publishes
    bootstrap events on the pool's bus; `launch` is the final worker command after every plugin
    launcher folded over it.
    """

    image: Any
    ops: tuple[Any, ...]
    launch: Any
    emit: Callable[[Any], None]
    bootstrap_timeout: float
    secrets: tuple[str, ...] = ()
    #: Which of the node's workers this is (0 unless a plugin asks for several per node, as mig does).
    worker: int = 0


class ProviderConfig(Protocol):
    """What every provider config offers: a name for events and a factory for the worker side."""

    @property
    def name(self) -> str: ...

    def create(self) -> Provider: ...


class Provider(abc.ABC):
    name: str = "provider"
    #: The pool's `sky.Options` (timeouts, retries), set by the pool before `prepare`.
    options: Any = None
    #: What a worker runs when it stops for client silence (`Spec.ttl`): clouds power the machine
    #: off ("sudo shutdown -h now"); None leaves the machine alone (Local, SSH).
    shutdown_command: str | None = None

    @abc.abstractmethod
    async def prepare(self, spec: Spec, pool_id: str) -> Cluster:
        """Validate credentials and create shared resources (networks, keys); nothing billable yet."""

    @abc.abstractmethod
    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """Start one instance per node index in `nodes`."""

    @abc.abstractmethod
    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> Channel:
        """Bootstrap `instance` if needed, start its worker with `setup.launch`; return the channel."""

    def python_bin(self, cluster: Cluster) -> str:
        """The interpreter workers run under (the bootstrapped venv's, on remote hosts)."""
        return "python3"

    def venv_dir(self, cluster: Cluster) -> str:
        return ""

    @abc.abstractmethod
    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Stop these instances; must be idempotent."""

    async def teardown(self, cluster: Cluster) -> None:
        """Remove what `prepare` created. Called last, also after failures."""
