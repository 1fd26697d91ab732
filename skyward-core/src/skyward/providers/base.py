"""The provider contract: what a provider package writes, and the order the pool calls it in.

A provider comes in two halves. The *config* (`sky.Local()`, `sky.SSH(hosts=...)`,
`sky.AWS(...)`) is a frozen value the user writes; it travels inside specs (pickled), so it holds
settings only (`ProviderConfig`). `config.create(options)` turns it into a `Provider`, the object
that does the work for one pool, on the pool's event loop, with the pool's `sky.Options`.

The lifecycle, in the order the pool calls it:

1. `config.create(options)`: a new `Provider` for one pool; no I/O, nothing billable.
   `config.hourly_price(spec)` may be asked before, to order several specs by cost (None: cannot tell).
2. `prepare(spec, pool_id) -> Cluster`: check credentials, create shared resources (keys,
   networks); nothing billable yet.
3. `provision(cluster, nodes) -> [Instance]`: launch one machine per node index (also later, to
   replace a lost node or to grow the pool).
4. `connect(cluster, instance, setup) -> Channel`: bootstrap the machine if needed and start one
   worker with `setup.launch`; called once per worker (several per node with `mig`), and again to
   restart a worker on a machine that is still there.
5. `preemptions(cluster, instances)`: while the pool runs, every `reconcile_tick_interval` and
   when a node is lost: which machines the cloud is taking back (spot). Optional: none by default.
6. `renew_lease(cluster, instances, until)`: while the pool runs, every ~`Spec.ttl`/3 (1 to 15
   minutes), move the pool's expiry mark (AWS's `skyward:expires` tag) to `until` (epoch seconds),
   so a long job is never taken for an abandoned one by `sky down` or a clean-up script. Optional:
   the default does nothing (a provider whose API cannot relabel a machine relies on the node's
   guardian alone).
7. `terminate(cluster, instances)`: end these machines (idempotent): on a cloud they are deleted.
8. `teardown(cluster)`: remove what `prepare` created; called last, also after a failed start. The
   pool's `stop()` gives `terminate` and `teardown` together `release_timeout` seconds (beyond
   `Options.shutdown_timeout` for the workers) before it reports, naming them, the machines whose
   end it could not confirm.

With `Options(linger=True)`, a pool that exits cleanly first offers its machines to
`park(cluster, instances, until)`: a provider that keeps them (clouds: `providers/linger.py`)
returns True, and then neither `terminate` nor `teardown` is called; their guardians end them at
`until` unless a compatible pool adopts them first (in its `prepare`).

Beside them: `end_machine_command(cluster, instance)` (by default `shutdown_command`), the command
that ends a machine from inside it (the node's guardian, `skyward.guardian`, runs it when the
pool's lease lapses; the `skyward_end_machine_command` hook may answer instead), and
`guards_nodes`, whether the nodes run that guardian; `machines(cluster)`, the
pool's machines that exist now, for `sky ls` (empty once everything is terminated and torn
down); `python_bin`/`venv_dir` (the worker's interpreter), and, for `sky.plan`, `bootstrap_args()`
and `planned_instances()`, which answer without creating anything.

`skyward.testing.provider_contract` checks a provider package against this contract.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from skyward.extension.provider_config import ProviderConfig as ProviderConfig
from skyward.options import Options

if TYPE_CHECKING:
    from pathlib import Path

    from skyward.bootstrap.ops import Op
    from skyward.extension.plugin import LaunchCommand
    from skyward.image import Image
    from skyward.observe.events import Event
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
    spec: Spec
    head_port: int = 29500
    state: dict[str, Any] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class NodeSetup:
    """Everything a provider needs to turn an instance into a running worker.

    `ops` are the plugins' bootstrap ops (appended after the image phases); `emit` publishes
    bootstrap events on the pool's bus; `launch` is the final worker command after every plugin
    launcher folded over it.
    """

    image: Image
    ops: tuple[Op, ...]
    launch: LaunchCommand
    emit: Callable[[Event], None]
    bootstrap_timeout: float
    secrets: tuple[str, ...] = ()
    #: Which of the node's workers this is (0 unless a plugin asks for several per node, as mig does).
    worker: int = 0
    #: What the node's guardian runs to end the machine when the pool's lease lapses (None: none).
    end_command: str | None = None
    #: Skyward's own wheels for the node (source "local"), assembled once by the pool before it
    #: asked for any machine, so that every node, a replacement too, gets the same ones. None:
    #: the bootstrap assembles them itself (a provider's own use of `prepare_node`).
    wheels: tuple[Path, ...] | None = None


class Provider(abc.ABC):
    """The work of one pool's provider; the lifecycle is in the module docstring.

    Every method runs on the pool's event loop. A subclass that writes `__init__` passes the
    options on: `super().__init__(options)`.
    """

    name: str = "provider"
    #: The command that ends this machine from inside it, run by the node's guardian when the
    #: pool's lease lapses (its client gone past `Spec.ttl`): clouds power the machine off ("sudo
    #: shutdown -h now"); None leaves the machine alone (Local, SSH: machines that are not the pool's).
    shutdown_command: str | None = None
    #: Whether its nodes keep the venv an image built between pools (`bootstrap.environments`):
    #: machines reached over SSH do; `sky.Local` builds none to keep.
    keeps_environments: bool = False
    #: Whether each node runs a guardian (`skyward.guardian`) holding the pool's lease: then the
    #: worker's own silence watchdog is off (a task holding the GIL would starve it into a false
    #: alarm) and the guardian ends the work instead.
    guards_nodes: bool = False
    #: How long `terminate` and `teardown` together may take to release the pool's machines
    #: (a cloud's termination can take minutes): the pool's `stop()` waits this long before it
    #: reports what it could not confirm.
    release_timeout: float = 120.0
    #: The pool's `sky.Options` (timeouts, retries), as given to the constructor.
    options: Options
    #: Whether `provision` tells the pool when each machine is launched and running (through
    #: `announce`), as a cloud does; else the pool says so when a node's worker starts and answers.
    announces_machines: bool = False

    def announce(self, event: Any) -> None:
        """Tell the pool what a machine is doing (`sky.InstanceLaunched`, `sky.InstanceRunning`).
        The pool replaces this with its event bus before `provision`; alone, it tells no one."""
        return None

    def __init__(self, options: Options | None = None) -> None:
        self.options = options if options is not None else Options()

    @abc.abstractmethod
    async def prepare(self, spec: Spec, pool_id: str) -> Cluster:
        """Validate credentials and create shared resources (networks, keys); nothing billable yet."""

    @abc.abstractmethod
    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """Start one instance per node index in `nodes`."""

    @abc.abstractmethod
    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> Channel:
        """Bootstrap `instance` if needed, start its worker with `setup.launch`; return the channel."""

    @abc.abstractmethod
    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        """End these instances (delete the machines, or stop what ran there); must be idempotent."""

    async def teardown(self, cluster: Cluster) -> None:
        """Remove what `prepare` created. Called last, also after failures."""
        return None

    @abc.abstractmethod
    async def machines(self, cluster: Cluster) -> list[Instance]:
        """This pool's machines that exist now, as `sky ls` lists them: those provisioned and not
        yet terminated (a cloud also lists what its API still shows under the pool's tag). Empty
        once every machine is terminated and the pool torn down: nothing is left behind."""

    async def park(self, cluster: Cluster, instances: list[Instance], until: float) -> bool:
        """Keep these machines, idle, for a later compatible pool until `until` (epoch seconds),
        instead of ending them (`Options(linger=True)`, a clean exit). True when kept: the pool
        then neither terminates them nor tears down. False by default: nothing lingers."""
        return False

    async def hold(self, cluster: Cluster, instances: list[Instance]) -> bool:
        """Record these running machines so that a pool server restarted after a crash can start
        the pool again on them (`providers/linger.py`, held records). False by default: not kept."""
        return False

    async def renew_lease(self, cluster: Cluster, instances: list[Instance], until: float) -> None:
        """Mark the pool's machines (and what goes with them) as leased until `until` (epoch
        seconds): the live client calls it every ~`Spec.ttl`/3. Nothing by default."""
        return None

    async def preemptions(self, cluster: Cluster, instances: list[Instance]) -> dict[str, str]:
        """The instances among `instances` that their cloud is taking back (a spot interruption
        notice, a reclaimed interruptible pod, an outbid bid), by id, each with the reason in
        words. The pool asks every `Options.reconcile_tick_interval` seconds and whenever a node
        is lost, and replaces the machines named (`client/preemption.py`). None by default."""
        return {}

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        """The shell command that ends `instance`'s machine from inside it (`shutdown_command`
        unless a provider needs the instance, as RunPod's pod id); None: nothing ends it."""
        return self.shutdown_command

    def python_bin(self, cluster: Cluster) -> str:
        """The interpreter workers run under (the bootstrapped venv's, on remote hosts)."""
        return "python3"

    def venv_dir(self, cluster: Cluster) -> str:
        """The venv workers run in (relative to the node folder on remote hosts)."""
        return ""

    def bootstrap_args(self) -> dict[str, Any]:
        """Keyword arguments for `render_script` that say how this provider's bootstrap builds the
        venv (`SSH(python=...)`: that interpreter, with its site-packages); `sky.plan` renders
        with them. None by default: the image's Python, installed by uv."""
        return {}

    def planned_instances(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """The instances `provision` would return for `nodes`, as far as they are known without
        creating anything (`sky.plan` shows node 0's address from them): placeholders by default;
        `sky.SSH` knows its hosts."""
        return [Instance(id=f"{cluster.id}-{node}", node=node) for node in nodes]
