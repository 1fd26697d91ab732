"""Fixtures for the Slurm tests: a real Slurm cluster on this machine (munged, slurmctld, two slurmd).

Nothing is faked: `sbatch`, `srun`, `squeue` and `scancel` are Slurm's own. The cluster lives in a
temporary folder, one per pytest-xdist worker with ports of its own, and stops when the session
ends; its absence fails the tests with the command that installs it. Pools use
`Slurm(python=sys.executable)`: the venv is built from this interpreter, with its site-packages.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slurm_cluster import SlurmCluster, slurm_running

import skyward as sky

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ssh"))


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A two-node cluster (`sky1`, `sky2`, partition `sky`); `SLURM_CONF` names it for the session."""
    with slurm_running(tmp_path_factory.mktemp("slurm")) as cluster:
        before = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = cluster.conf
        try:
            yield cluster
        finally:
            if before is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = before


def slurm_provider(cluster: SlurmCluster, **kwargs: Any) -> Any:
    kwargs.setdefault("partition", cluster.partition)
    kwargs.setdefault("python", sys.executable)
    return sky.Slurm(**kwargs)


def slurm_pool(cluster: SlurmCluster, *, provider: Any = None, **kwargs: Any) -> Any:
    """A pool (not started) that is one job on the cluster, quiet."""
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    kwargs.setdefault("nodes", 2)
    return sky.Compute(provider=provider or slurm_provider(cluster), **kwargs)


@pytest.fixture(scope="module")
def pool(slurm: SlurmCluster) -> Iterator[sky.Pool]:
    """A two-node pool shared by a module's read-only tests."""
    compute = slurm_pool(slurm)
    compute.start()
    try:
        yield compute
    finally:
        compute.stop()
