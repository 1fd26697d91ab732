"""One pool's Slurm job: its batch script (the guardian that holds the allocation), and what
`squeue`, `sinfo` and `scancel` say of it.

The batch script holds the nodes and does nothing else but watch the pool's lease, a file in the
shared home folder that holds an epoch second: the client writes it ahead several times per
`Spec.ttl`. Once the lease has lapsed (the client was killed, or lost its network), or the file
is gone (the pool ended), the script removes the pool's folder and cancels its own job: nothing
outlives its client by more than `ttl` and a few seconds. `--time` bounds the job whatever happens.

A Skyward job is named `skyward-<pool id>` and carries the comment `skyward:<pool id>`, which is
how `sky ls` and `sky down` find it without a pool.
"""

from __future__ import annotations

import re
import shlex

import attrs

#: How often the job's guardian reads its lease (seconds).
LEASE_POLL = 3
JOB_PREFIX = "skyward-"
COMMENT_PREFIX = "skyward:"
#: `squeue -o` of one job: id, name, state, reason, nodes, comment, submit time.
QUEUE_FORMAT = "%i|%j|%T|%r|%N|%k|%V"
#: States of a job that will not run again (Slurm's long names).
ENDED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    }
)


def job_name(pool_id: str) -> str:
    return f"{JOB_PREFIX}{pool_id}"


def batch_script(pool_id: str, pool_dir: str, options: list[str]) -> str:
    """The job's script: `#SBATCH` lines, then the guardian's loop over the lease file."""
    q = shlex.quote
    header = [
        f"--job-name={job_name(pool_id)}",
        f"--comment={COMMENT_PREFIX}{pool_id}",
        f"--output={pool_dir}/job-%j.out",
        "--signal=B:TERM@30",
        *options,
    ]
    lines = ["#!/bin/sh", *(f"#SBATCH {q(opt)}" for opt in header)]
    lines += [
        f"lease={q(pool_dir + '/lease')}",
        "while :; do",
        '  until=$(cat "$lease" 2>/dev/null || echo 0)',
        '  [ "${until%%.*}" -gt "$(date +%s)" ] 2>/dev/null || break',
        f"  sleep {LEASE_POLL}",
        "done",
        'echo "skyward: the pool\'s lease lapsed or the pool ended: cancelling job $SLURM_JOB_ID"',
        f"rm -rf {q(pool_dir)}",
        'scancel "$SLURM_JOB_ID"',
        "",
    ]
    return "\n".join(lines)


@attrs.frozen
class JobState:
    """One job as `squeue` lists it (`state` in Slurm's long form: PENDING, RUNNING...)."""

    id: str
    name: str
    state: str
    reason: str
    nodelist: str
    comment: str = ""
    submitted: str = ""

    @property
    def pool(self) -> str | None:
        """The pool id this job belongs to, when it is Skyward's (name and comment agree)."""
        if (
            self.name.startswith(JOB_PREFIX)
            and self.comment == f"{COMMENT_PREFIX}{self.name[len(JOB_PREFIX) :]}"
        ):
            return self.name[len(JOB_PREFIX) :]
        return None


def parse_queue(text: str) -> list[JobState]:
    """Rows of `squeue -h -o QUEUE_FORMAT`."""
    jobs = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 7:
            jobs.append(JobState(*parts))
    return jobs


def queue_command(job: str | None = None) -> str:
    """`squeue` of one job, or of all this user's jobs."""
    which = f"--jobs={shlex.quote(job)}" if job else '--user="$(id -un)"'
    return f"squeue -h {which} -o {shlex.quote(QUEUE_FORMAT)} 2>&1"


@attrs.frozen
class NodeFacts:
    name: str
    address: str
    cpus: int
    memory_gb: float


def parse_nodes(text: str) -> dict[str, NodeFacts]:
    """Rows of `sinfo -h -N -o '%N|%o|%c|%m'`: name, address, CPUs, memory in MB."""
    facts: dict[str, NodeFacts] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        name, address, cpus, memory = parts
        memory_mb = re.sub(r"\D.*$", "", memory)
        facts[name] = NodeFacts(
            name=name,
            address=address or name,
            cpus=int(cpus) if cpus.isdigit() else 0,
            memory_gb=round(int(memory_mb) / 1024, 1) if memory_mb else 0.0,
        )
    return facts


def nodes_command(nodelist: str) -> str:
    """The job's nodes in order, with their facts: `scontrol show hostnames` keeps Slurm's order."""
    q = shlex.quote
    return (
        f"for n in $(scontrol show hostnames {q(nodelist)}); do "
        "sinfo -h -N -n \"$n\" -o '%N|%o|%c|%m' | head -n 1; done"
    )
