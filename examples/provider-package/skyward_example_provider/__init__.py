"""`sky.Folders()`: a third-party Skyward provider whose machines are folders on this machine.

Each node's "machine" is a folder, `<root>/<pool>-node-<i>`, and its worker a process started in
it from this interpreter (the pool stops it through its channel). The provider writes the whole
contract of `skyward.providers.base`: the folders are created by `provision`, listed by
`machines` (by their pool prefix, as a cloud lists its machines by tag, so a fresh provider in
another process finds them too), removed by `terminate`; `teardown` removes what is left.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import attrs

from skyward.extension.hookspecs import hookimpl
from skyward.options import Options
from skyward.providers.base import Cluster, Instance, NodeSetup, Provider, ProviderConfig
from skyward.spec import Spec
from skyward.transport.pipes import PipeChannel

DEFAULT_ROOT = os.path.join(tempfile.gettempdir(), "skyward-folders")


@attrs.frozen
class Folders(ProviderConfig):
    """Run each node in its own folder under `root`, as a worker process of this machine."""

    root: str = DEFAULT_ROOT

    @property
    def name(self) -> str:
        return "folders"

    def create(self, options: Options | None = None) -> FoldersProvider:
        return FoldersProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        return 0.0  # this machine is already paid for


class FoldersProvider(Provider):
    name = "folders"

    def __init__(self, config: Folders, options: Options | None = None) -> None:
        super().__init__(options)
        self.root = Path(config.root)

    def folder(self, cluster: Cluster, node: int) -> Path:
        return self.root / f"{cluster.id}-node-{node}"

    async def prepare(self, spec: Spec, pool_id: str) -> Cluster:
        self.root.mkdir(parents=True, exist_ok=True)
        return Cluster(id=pool_id, provider=self.name, spec=spec)

    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        instances = []
        for node in nodes:
            folder = self.folder(cluster, node)
            folder.mkdir(exist_ok=True)
            instances.append(Instance(id=folder.name, node=node, instance_type="folder"))
        return instances

    def python_bin(self, cluster: Cluster) -> str:
        return sys.executable

    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> PipeChannel:
        env = {**os.environ, **{k: str(v) for k, v in setup.image.env.items()}}
        command = ["/bin/sh", "-c", f"exec {setup.launch.render()}"]
        channel = PipeChannel(command, env=env, cwd=str(self.folder(cluster, instance.node)))
        channel.spawn()
        return channel

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        # The workers are gone already: the pool stops each through its channel first.
        for instance in instances:
            shutil.rmtree(self.folder(cluster, instance.node), ignore_errors=True)

    async def teardown(self, cluster: Cluster) -> None:
        await self.terminate(cluster, await self.machines(cluster))

    async def machines(self, cluster: Cluster) -> list[Instance]:
        prefix = f"{cluster.id}-node-"
        found = sorted(self.root.glob(f"{prefix}*")) if self.root.is_dir() else []
        return [
            Instance(id=p.name, node=int(p.name[len(prefix):]), instance_type="folder")
            for p in found
            if p.name[len(prefix):].isdigit()
        ]


@hookimpl
def skyward_providers() -> dict[str, object]:
    """`sky.Folders` and `provider = "folders"`, through the `skyward` entry point."""
    return {"Folders": Folders}
