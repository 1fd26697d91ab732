"""A pool whose job waits in the queue says so, with Slurm's reason, and starts when nodes free up;
`provision_timeout` bounds the wait and leaves no job behind."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from conftest import slurm_pool
from slurm_cluster import SlurmCluster
from ssh_hosts import wait_until

import skyward as sky
from skyward.errors import ProvisionError


@sky.function
def one() -> int:
    return 1


def _fill(slurm: SlurmCluster) -> str:
    """A job of someone else's holding every node of the cluster."""
    return slurm.run(
        "sbatch", "--parsable", "--job-name=other-user", "--output=/dev/null", "-N2", "--wrap", "sleep 600"
    ).strip()


def _skyward_job(slurm: SlurmCluster, state: str) -> dict[str, str] | None:
    return next((j for j in slurm.jobs() if j["state"] == state), None)


def test_a_queued_job_shows_its_reason_and_starts_when_the_cluster_frees(slurm: SlurmCluster) -> None:
    blocker = _fill(slurm)
    events: list[Any] = []
    pool = slurm_pool(slurm, on_event=events.append)
    started = threading.Thread(target=pool.start)
    started.start()
    try:
        assert wait_until(lambda: _skyward_job(slurm, "PENDING") is not None, 120), slurm.jobs()
        assert wait_until(
            lambda: any("pending (Resources)" in str(getattr(e, "instance_id", "")) for e in events), 30
        ), events
        slurm.run("scancel", blocker)
        started.join(300)
        assert not started.is_alive()
        assert (one() @ pool) == [1, 1]
    finally:
        slurm.run("scancel", blocker)
        started.join(300)
        pool.stop()
    slurm.wait_idle()


def test_a_job_still_queued_at_the_provision_timeout_fails_the_pool_and_is_cancelled(
    slurm: SlurmCluster,
) -> None:
    blocker = _fill(slurm)
    try:
        pool = slurm_pool(slurm, options=sky.Options(provision_timeout=5))
        with pytest.raises(ProvisionError, match=r"still pending \(Resources\)"), pool:
            pass
        assert slurm.jobs() == []
    finally:
        slurm.run("scancel", blocker)
