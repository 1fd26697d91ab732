"""A client killed mid-task leaves no job: the job's guardian cancels it once the lease lapses;
`sky ls` lists a pool's job and `sky down` cancels it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from client_kill import BOUND, kill_when, start_client
from conftest import slurm_pool
from slurm_cluster import SlurmCluster
from ssh_hosts import wait_until

PROVIDER = f"sky.Slurm(partition='sky', python={sys.executable!r})"


def test_a_killed_client_leaves_no_job_after_its_lease(slurm: SlurmCluster, tmp_path: Path) -> None:
    client = start_client(tmp_path, PROVIDER, nodes=2)
    kill_when(client, client.started.exists, 240)
    (job,) = slurm.jobs()
    pool_dir = Path.home() / ".skyward" / "slurm" / job["name"].removeprefix("skyward-")
    assert pool_dir.exists()
    assert wait_until(lambda: slurm.jobs() == [], BOUND + 10), slurm.jobs()
    assert not pool_dir.exists()


def _sky(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skyward.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_sky_ls_lists_the_pools_job_and_sky_down_cancels_it(slurm: SlurmCluster) -> None:
    pool = slurm_pool(slurm)
    pool.start()
    try:
        (job,) = slurm.jobs()
        listed = _sky("ls", "--provider", "slurm", "--json")
        assert listed.returncode == 0, listed.stderr
        assert job["id"] in listed.stdout and job["name"].removeprefix("skyward-") in listed.stdout
        pool_id = job["name"].removeprefix("skyward-")
        ended = _sky("down", pool_id, "--provider", "slurm", "--yes", "--json")
        assert ended.returncode == 0, ended.stdout + ended.stderr
        assert json.loads(ended.stdout), ended.stdout
        assert wait_until(lambda: slurm.jobs() == [], 30), slurm.jobs()
    finally:
        pool.stop()
