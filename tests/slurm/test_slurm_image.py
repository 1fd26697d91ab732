"""The image on a cluster: Image.pip, env and includes reach every node, from one environment
built once in the shared home folder for all of them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from conftest import slurm_pool
from slurm_cluster import SlurmCluster

import skyward as sky


@sky.function
def probe() -> dict[str, Any]:
    import six  # installed by the bootstrap into the pool's venv
    import skyward_slurm_include_probe  # shipped with Image.includes

    return {
        "six": os.path.realpath(six.__file__),
        "venv": os.path.realpath(sys.prefix),
        "include": skyward_slurm_include_probe.VALUE,
        "env": os.environ.get("SKYWARD_SLURM_TEST"),
        "node": os.environ.get("SLURMD_NODENAME"),
    }


def test_pip_env_and_includes_reach_both_nodes_from_one_environment(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    module = tmp_path / "skyward_slurm_include_probe.py"
    module.write_text("VALUE = 42\n")
    image = sky.Image(pip=["six"], env={"SKYWARD_SLURM_TEST": "it's here"}, includes=[str(module)])
    phases: list[sky.BootstrapPhase] = []
    pool = slurm_pool(slurm, image=image)
    pool.on(sky.BootstrapPhase, phases.append)
    with pool:
        found = probe() @ pool
    assert [f["node"] for f in found] == list(slurm.nodes)
    assert all(f["include"] == 42 and f["env"] == "it's here" for f in found)
    assert len({f["venv"] for f in found}) == 1  # one environment, in the shared home
    assert all(f["six"].startswith(f["venv"] + "/") for f in found)
    assert [p.phase for p in phases if p.event == "completed"].count("venv") == 1  # built once
    slurm.wait_idle()
