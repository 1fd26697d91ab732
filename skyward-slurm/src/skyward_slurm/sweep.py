"""Skyward's Slurm jobs found and cancelled without a pool: Slurm's answer to `sky ls` / `sky down`.

A job is Skyward's when its name is `skyward-<pool>` and its comment `skyward:<pool>`
(`job.JobState.pool`); only this user's jobs are listed (`squeue --user`), and `end` reads each
job back before cancelling it. A row is one node of a job (its Slurm name, as the pool's
instances are named), and ending any of them cancels the whole job. The lease is the pool's
lease file in this home folder, when the cluster shares it with this machine: `sky down
--expired` then picks the jobs of dead clients. A job already cancelled and completing is not
listed. The commands run here: `sky ls` finds the jobs where `squeue` works (a login node,
`SLURM_CONF`).
"""

from __future__ import annotations

import datetime
import os
import shlex
import subprocess
from collections.abc import Collection, Sequence

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.sweep import Ended, Machine, SweepReport
from skyward_slurm import job as jobs
from skyward_slurm.config import local_cluster

TIMEOUT = 30.0
#: Jobs that hold nothing for long: ended, or cancelled and releasing their nodes.
GONE = jobs.ENDED | {"COMPLETING"}


def _run(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )


def _lease(pool: str) -> datetime.datetime | None:
    path = os.path.expanduser(f"~/.skyward/slurm/{pool}/lease")
    try:
        with open(path) as f:
            return datetime.datetime.fromtimestamp(int(f.read().strip()), datetime.UTC)
    except (OSError, ValueError, OverflowError):
        return None


def _submitted(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text).astimezone(datetime.UTC)
    except ValueError:
        return None


@attrs.define
class SlurmSweeper:
    name: str = "Slurm"

    def credentials(self) -> CredentialStatus:
        return local_cluster("squeue")

    def _jobs(self) -> list[jobs.JobState]:
        done = _run(jobs.queue_command())
        if done.returncode != 0:
            raise RuntimeError(f"squeue failed: {(done.stderr or done.stdout).strip()}")
        return [j for j in jobs.parse_queue(done.stdout) if j.pool is not None]

    def machines(self, region: str | None = None) -> list[Machine]:
        return [m for j in self._jobs() if j.state not in GONE for m in self._machines(j)]

    def _machines(self, job: jobs.JobState) -> list[Machine]:
        """One row per node of the job, named as the pool names its instances (the node's Slurm
        name); a job still queued has no node yet, and is one row named for the job."""
        pool = job.pool or ""
        names = _hostnames(job.nodelist) or [f"job {job.id}"]
        return [
            Machine(
                provider=self.name,
                pool=pool,
                node=i if job.nodelist else None,
                id=name,
                instance_type=f"slurm job {job.id}",
                region="slurm",
                state=job.state.lower(),
                launched_at=_submitted(job.submitted),
                lease_expires=_lease(pool),
            )
            for i, name in enumerate(names)
        ]

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        """Cancel the job of each pool named by `machines` (a job ends whole), read back first."""
        current = {j.pool: j.id for j in self._jobs() if j.state not in jobs.ENDED}
        outcome: dict[str, str | None] = {}
        items = []
        for machine in machines:
            job = current.get(machine.pool)
            if job is None or machine.instance_type != f"slurm job {job}":
                items.append(
                    Ended(
                        self.name,
                        machine.pool,
                        "machine",
                        machine.id,
                        "not found as this pool's Skyward job; left alone",
                    )
                )
                continue
            if job not in outcome:
                done = _run(f"scancel {shlex.quote(job)}")
                outcome[job] = (
                    None
                    if done.returncode == 0
                    else (done.stderr.strip() or f"scancel exited {done.returncode}")
                )
            items.append(Ended(self.name, machine.pool, "machine", machine.id, outcome[job]))
        return SweepReport(tuple(items))


def _hostnames(nodelist: str) -> list[str]:
    if not nodelist or nodelist.startswith("("):
        return []
    done = _run(f"scontrol show hostnames {shlex.quote(nodelist)}")
    return done.stdout.split() if done.returncode == 0 else [nodelist]
