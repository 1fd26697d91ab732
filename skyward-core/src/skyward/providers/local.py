"""`sky.Local()`: nodes are worker processes on this machine, started from this interpreter.

It is the default when no provider is given, and it runs the same worker and wire protocol as a
remote node, so everything tested on Local holds over SSH except the transport.

Workers are forks of one interpreter per pool that has imported the worker already
(`skyward.transport.forkserver`), so a pool pays Python's start-up once, not once per node; on
two cores that halves the start of a pool of four. `Local(fork=False)` starts each worker from a
fresh interpreter instead, as Local does anyway where forking does not apply: off Linux, and when
a plugin's launcher wraps the worker's command.

`sky.Local(isolated=True)` instead gives each node its own folder under a temporary pool folder and
runs the same bootstrap script a remote host runs (uv venv, pip, env, includes, plugin ops) there;
the worker starts in that folder from the node's venv. The pool folder is removed at teardown, also
when the pool failed to start.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import re
import shutil
import socket
import sys
import tempfile
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import structlog

from skyward.extension.plugin import LaunchCommand
from skyward.options import Options
from skyward.providers.base import Cluster, Instance, NodeSetup, Provider, ProviderConfig
from skyward.transport import forkserver
from skyward.transport.pipes import PipeChannel

if TYPE_CHECKING:
    from skyward.providers.credentials import CredentialStatus
    from skyward.spec import Spec


@attrs.frozen
class Local(ProviderConfig):
    """Run each node as a worker process on this machine (no cloud account needed).

    `isolated=True` bootstraps every node into its own venv with the remote bootstrap script,
    so `Image.pip`, `env`, `includes` and plugin ops apply exactly as on a remote host.
    """

    isolated: bool = False
    #: Fork workers from a pre-imported interpreter (Linux; see the module docstring).
    fork: bool = True
    #: Volumes are not mounted here (tasks see this machine's files; `_warn_unmounted` says so).
    mounts_volumes: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return "local"

    @property
    def bootstraps(self) -> bool:
        return self.isolated

    def create(self, options: Options | None = None) -> LocalProvider:
        return LocalProvider(options, isolated=self.isolated, fork=self.fork)

    def hourly_price(self, spec: Spec) -> float:
        """What a node costs per hour, for `Options(selection="cheapest")`: nothing, here."""
        return 0.0

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: this machine needs no credentials."""
        from skyward.providers.credentials import CredentialStatus

        return CredentialStatus(found=True, where="none needed", verified=True if check else None)


#: `Cluster.state` key of the pool folder of `Local(isolated=True)`.
STATE_DIR = "local_dir"
#: The venv's python and folder, relative to the node folder the worker starts in (as over SSH).
ISOLATED_PYTHON = "venv/bin/python"
ISOLATED_VENV = "venv"


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:40]


def free_port() -> int:
    """A loopback port free now whose next one is free too: the pool's rendezvous port is torch's,
    and jax's coordinator takes the next one (`skyward_jax`), which nothing else checks."""
    for _ in range(100):
        with socket.socket() as sock, socket.socket() as neighbour:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
            if port >= 65535:
                continue
            try:
                neighbour.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port
    raise OSError("no two neighbouring loopback ports are free on this machine")


_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def missing_packages(requirements: tuple[str, ...]) -> list[str]:
    """Requirements whose distribution is not installed in this interpreter."""
    missing = []
    for req in requirements:
        match = _REQUIREMENT_NAME.match(req)
        if not match:
            continue
        try:
            importlib.metadata.distribution(match.group(1))
        except importlib.metadata.PackageNotFoundError:
            missing.append(req)
    return missing


def machine_resources() -> tuple[int, float]:
    """(CPUs this process may run on, physical memory in GB) of this machine; (0, 0.0) where unknown.

    CPUs are the scheduler's affinity set where there is one (Linux: a container or `taskset` limits
    it below `os.cpu_count()`), memory is the physical total in GiB, one decimal, the same unit an
    SSH host reports from `/proc/meminfo`.
    """
    getaffinity = getattr(os, "sched_getaffinity", None)  # Linux; macOS has only the count
    try:
        vcpus = len(getaffinity(0)) if getaffinity is not None else os.cpu_count() or 0
    except OSError:
        vcpus = os.cpu_count() or 0
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # not every platform names both
        memory = _meminfo_total()
    return vcpus, round(memory / 1024**3, 1) if memory > 0 else 0.0


def _meminfo_total() -> int:
    """MemTotal from /proc/meminfo in bytes, 0 where there is no such file."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class LocalProvider(Provider):
    name = "local"

    def __init__(self, options: Options | None = None, *, isolated: bool = False, fork: bool = True) -> None:
        super().__init__(options)
        self.isolated = isolated
        self.fork = fork and not isolated and forkserver.available()
        self._server: forkserver.ForkServer | None = None
        self._setup_checked = False
        #: isolated: each node's bootstrap script, once it ran, and the lock its workers take turns on.
        self._scripts: dict[int, Any] = {}
        self._node_locks: dict[int, asyncio.Lock] = {}
        #: The instances provisioned and not terminated yet, by id: `machines`.
        self._held: dict[str, Instance] = {}

    async def prepare(self, spec: Spec, pool_id: str) -> Cluster:
        if self.isolated:
            return self._prepare_isolated(spec, pool_id)
        missing = missing_packages(tuple(spec.image.pip))
        if missing:
            warnings.warn(
                f"sky.Local() runs workers with this interpreter, which lacks {', '.join(missing)}: "
                f"pip install {' '.join(missing)} here, or use a remote provider, whose bootstrap "
                "installs Image.pip.",
                stacklevel=2,
            )
        _warn_unmounted(spec, "sky.Local()")
        return Cluster(id=pool_id, provider=self.name, spec=spec, head_port=free_port())

    def _warn_unapplied(self, cluster: Cluster, setup: NodeSetup) -> None:
        """Once per pool: what the plugins asked of the bootstrap, which this provider does not run
        (packages their transforms added that this interpreter lacks, and their bootstrap ops)."""
        if self._setup_checked:
            return
        self._setup_checked = True
        added = tuple(p for p in setup.image.pip if p not in cluster.spec.image.pip)
        missing = missing_packages(added)
        if missing:
            warnings.warn(
                f"sky.Local() runs workers with this interpreter, which lacks {', '.join(missing)} "
                f"(asked for by the pool's plugins): pip install {' '.join(missing)} here, or use "
                "sky.Local(isolated=True) or a remote provider, whose bootstrap installs them.",
                stacklevel=2,
            )
        if setup.ops:
            names = ", ".join(dict.fromkeys(op.name for op in setup.ops))
            warnings.warn(
                f"sky.Local() runs no bootstrap, so the plugins' bootstrap ops ({names}) are not run "
                "on this machine; use sky.Local(isolated=True) or a remote provider to run them.",
                stacklevel=2,
            )

    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        # Every node is this machine, so each reports its figures (`instance_info().vcpus` and
        # `.memory_gb`, which a task may size its work by), as an SSH host reports its own.
        vcpus, memory_gb = machine_resources()
        instances = [
            Instance(
                id=f"{cluster.id}-local-{i}", node=i, instance_type="process", vcpus=vcpus,
                memory_gb=memory_gb,
            )
            for i in nodes
        ]
        self._held.update((i.id, i) for i in instances)
        return instances

    async def machines(self, cluster: Cluster) -> list[Instance]:
        """The process slots provisioned and not terminated yet (this machine is not the pool's)."""
        return list(self._held.values())

    def python_bin(self, cluster: Cluster) -> str:
        if self.isolated:
            return ISOLATED_PYTHON  # relative to the node folder the worker starts in
        return sys.executable

    def venv_dir(self, cluster: Cluster) -> str:
        if self.isolated:
            return ISOLATED_VENV
        return sys.prefix

    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> PipeChannel:
        if self.isolated:
            return await self._connect_isolated(cluster, instance, setup)
        self._warn_unapplied(cluster, setup)
        image, launch = setup.image, setup.launch
        env = dict(os.environ)
        env.update({k: str(v) for k, v in image.env.items()})
        includes = [os.path.abspath(p) for p in image.includes]
        python_path = [p for p in (*_include_roots(includes), env.get("PYTHONPATH", "")) if p]
        if python_path:
            env["PYTHONPATH"] = os.pathsep.join(python_path)
        env["PYTHONUNBUFFERED"] = "1"
        # The worker starts through the launcher chain's final command, exactly as rendered.
        channel = PipeChannel(["/bin/sh", "-c", f"exec {launch.render()}"], env=env)
        server = self._fork_server(env, launch)
        if server is not None:
            try:
                await channel.spawn_forked(server)
                return channel
            except forkserver.ForkServerError as exc:
                structlog.get_logger().warning(
                    "skyward.forkserver_failed", error=str(exc), fallback="a fresh interpreter per worker"
                )
                self.fork = False
                await asyncio.to_thread(self._close_server)
        channel.spawn()
        return channel

    def _fork_server(self, env: dict[str, str], launch: LaunchCommand) -> forkserver.ForkServer | None:
        """The pool's fork server (started by the first worker), when this worker may be a fork:
        its command is the plain worker's, and its environment the one the server started with."""
        if not self.fork or launch != LaunchCommand.worker(sys.executable):
            return None
        if self._server is None:
            self._server = forkserver.ForkServer(env)
            self._server.start()
        return self._server if self._server.env == env else None

    def _close_server(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Local instances are the worker processes, which the pool stops with their channels."""
        for instance in instances:
            self._held.pop(instance.id, None)

    async def teardown(self, cluster: Cluster) -> None:
        await asyncio.to_thread(self._close_server)
        base = cluster.state.get(STATE_DIR) if cluster is not None else None
        if base:
            shutil.rmtree(base, ignore_errors=True)

    # -- isolated nodes --------------------------------------------------------------------------------

    def _prepare_isolated(self, spec: Spec, pool_id: str) -> Cluster:
        _warn_unmounted(spec, "sky.Local(isolated=True)")
        base = tempfile.mkdtemp(prefix=f"skyward-{_safe(pool_id)}-")
        state = {STATE_DIR: base}
        return Cluster(id=pool_id, provider=self.name, spec=spec, head_port=free_port(), state=state)

    @staticmethod
    def node_dir(cluster: Cluster, node: int) -> str:
        """The folder of node `node`: its venv, env.sh, wheels, includes and bootstrap files."""
        return os.path.join(cluster.state[STATE_DIR], f"node-{node}")

    async def _connect_isolated(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> PipeChannel:
        from skyward.bootstrap.prepare import prepare_node
        from skyward.bootstrap.runner import LocalRunner, clean_environment

        workdir = self.node_dir(cluster, instance.node)
        try:
            # One node's workers (several with mig) share its folder: the first bootstraps it and
            # the others reuse its script instead of running the bootstrap again at the same time.
            async with self._node_locks.setdefault(instance.node, asyncio.Lock()):
                script = self._scripts.get(instance.node)
                if script is None:
                    script = await prepare_node(
                        LocalRunner(), setup, node=instance.node, workdir=workdir, python=None
                    )
                    self._scripts[instance.node] = script
            channel = PipeChannel(
                ["/bin/sh", "-c", script.launch_line(setup.launch)], env=clean_environment(), cwd=workdir
            )
            channel.spawn()
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        return channel


def _include_roots(includes: list[str]) -> list[str]:
    """`includes` name dirs or .py files; what must go on sys.path is the folder that holds them."""
    roots: list[str] = []
    for path in includes:
        root = os.path.dirname(path) if os.path.isfile(path) or not os.path.isdir(path) else path
        if os.path.isdir(path) and not os.path.exists(os.path.join(path, "__init__.py")):
            root = path  # a source folder: its modules import directly
        elif os.path.isdir(path):
            root = os.path.dirname(path)  # a package: its parent goes on the path
        if root not in roots:
            roots.append(root)
    return roots


def _warn_unmounted(spec: Spec, provider: str) -> None:
    """Volumes are not mounted on this machine: say so once, at prepare, rather than silently."""
    if spec.volumes:
        mounts = ", ".join(v.mount for v in spec.volumes)
        warnings.warn(
            f"{provider} does not mount volumes ({mounts}); tasks see this machine's filesystem.",
            stacklevel=3,
        )
