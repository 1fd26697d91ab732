"""Skyward's Slurm jobs found and cancelled without a pool: Slurm's answer to `sky ls` / `sky down`.

A job is Skyward's when its name is `skyward-<pool>` and its comment `skyward:<pool>`
(`job.JobState.pool`); only this user's jobs are listed (`squeue --user`), and `end` reads each
job back before cancelling it. One job is one pool, so a row is a job (its node list in the
type column), not a node. The lease is the pool's lease file in this home folder, when the
cluster shares it with this machine: `sky down --expired` then picks the jobs of dead clients.
The commands run here: `sky ls` finds the jobs where `squeue` works (a login node, `SLURM_CONF`).
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
from collections.abc import Collection, Sequence

import attrs

from skyward.providers.credentials import CredentialStatus
from skyward.providers.sweep import Ended, Machine, SweepReport
from skyward_slurm import job as jobs

TIMEOUT = 30.0


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
        found = shutil.which("squeue") is not None
        return CredentialStatus(
            found=found, where="squeue on this machine" if found else "no squeue on this machine"
        )

    def _jobs(self) -> list[jobs.JobState]:
        done = _run(jobs.queue_command())
        if done.returncode != 0:
            raise RuntimeError(f"squeue failed: {(done.stderr or done.stdout).strip()}")
        return [j for j in jobs.parse_queue(done.stdout) if j.pool is not None]

    def machines(self, region: str | None = None) -> list[Machine]:
        return [
            Machine(
                provider=self.name,
                pool=j.pool or "",
                node=None,
                id=j.id,
                instance_type=f"job on {j.nodelist or '(no nodes yet)'}",
                region="slurm",
                state=j.state.lower(),
                launched_at=_submitted(j.submitted),
                lease_expires=_lease(j.pool or ""),
            )
            for j in self._jobs()
            if j.state not in jobs.ENDED
        ]

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        ours = {j.id: j.pool for j in self._jobs()}
        items = []
        for machine in machines:
            if ours.get(machine.id) != machine.pool:
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
            done = _run(f"scancel {machine.id}")
            error = (
                None if done.returncode == 0 else (done.stderr.strip() or f"scancel exited {done.returncode}")
            )
            items.append(Ended(self.name, machine.pool, "machine", machine.id, error))
        return SweepReport(tuple(items))
