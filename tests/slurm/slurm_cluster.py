"""A real Slurm cluster on this machine, in a folder of its own: munged, slurmctld, one slurmd per node.

Every node (`sky1`, `sky2`, ...) is this machine, each slurmd with its own name (`slurmd -N`), port
and spool folder, as Slurm's multiple-slurmd setup runs them. The daemons read `slurm.conf` from
the folder; the client commands find it through `SLURM_CONF`, which `slurm_env()` sets. Ports are
free ones picked at start, so that pytest-xdist workers each run a cluster of their own.

Nothing is installed here: `apt-get install -y slurm-wlm munge` (scripts/slurm-packages.sh).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

INSTALL = "apt-get install -y slurm-wlm munge  (or: bash scripts/slurm-packages.sh)"
DAEMONS = ("munged", "slurmctld", "slurmd")
#: Slurm keeps its binaries in sbin on Debian; a test runner's PATH may lack it.
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")


def _which(name: str) -> str | None:
    return shutil.which(name) or next(
        (f"{d}/{name}" for d in SBIN if os.access(f"{d}/{name}", os.X_OK)), None
    )


def missing_daemons() -> list[str]:
    return [name for name in (*DAEMONS, "sbatch", "srun", "squeue", "scancel") if _which(name) is None]


def _free_ports(count: int) -> list[int]:
    """`count` ports free on every address, below the kernel's ephemeral range: a port the kernel
    handed out and took back (bind to 0) may go to any connection's own end before the daemons
    bind it, which a loaded parallel run did ("Unable to bind listen port: Address already in
    use"); ports below that range are only ever taken on purpose."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    chosen: list[int] = []
    while len(chosen) < count:
        port = random.randrange(10_000, ephemeral_low)
        with socket.socket() as sock:
            try:
                sock.bind(("", port))
            except OSError:
                continue
        if port not in chosen:
            chosen.append(port)
    return chosen


@attrs.frozen
class SlurmCluster:
    """A running cluster: its folder, node names, partition and the environment its commands need."""

    root: Path
    nodes: tuple[str, ...]
    partition: str = "sky"

    @property
    def conf(self) -> str:
        return str(self.root / "slurm.conf")

    def env(self) -> dict[str, str]:
        """This process's environment with `SLURM_CONF` pointing at the cluster."""
        return {**os.environ, "SLURM_CONF": self.conf}

    def run(self, *argv: str) -> str:
        return subprocess.run(argv, env=self.env(), check=True, capture_output=True, text=True).stdout

    def jobs(self, name_prefix: str = "skyward-") -> list[dict[str, str]]:
        """The cluster's jobs whose name starts with `name_prefix`: id, name, state, nodes."""
        out = self.run("squeue", "-h", "-o", "%i|%j|%T|%N|%R")
        rows = [
            dict(zip(("id", "name", "state", "nodes", "reason"), line.split("|"), strict=False))
            for line in out.splitlines()
        ]
        return [r for r in rows if r["name"].startswith(name_prefix)]

    def wait_idle(self, timeout: float = 120.0) -> None:
        """Until no Skyward job is left on the cluster (a test's pool has let its job go)."""
        deadline = time.monotonic() + timeout
        while self.jobs():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Slurm jobs left after {timeout:.0f}s: {self.jobs()}")
            time.sleep(0.5)


def _conf(root: Path, nodes: tuple[str, ...], partition: str, ctl_port: int, node_ports: list[int]) -> str:
    host = socket.gethostname()
    node_lines = "\n".join(
        f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=1000 "
        "State=UNKNOWN"
        for name, port in zip(nodes, node_ports, strict=True)
    )
    return f"""\
ClusterName=sky{ctl_port}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctl_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=5
SrunPortRange=0-0
{node_lines}
PartitionName={partition} Nodes={",".join(nodes)} Default=YES MaxTime=INFINITE State=UP
"""


def _start_munge(root: Path) -> None:
    folder = root / "munge"
    folder.mkdir(mode=0o700)
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    subprocess.run(
        [
            _which("munged") or "munged",
            "--force",
            f"--key-file={key}",
            f"--socket={folder}/munge.socket",
            f"--pid-file={folder}/munged.pid",
            f"--log-file={folder}/munged.log",
            f"--seed-file={folder}/seed",
        ],
        check=True,
        capture_output=True,
    )


def _await(check, what: str, logs: list[Path], timeout: float = 60.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p}\n{p.read_text()[-2000:] if p.exists() else '(none)'}" for p in logs)
            raise TimeoutError(f"Slurm test cluster: {what} after {timeout:.0f}s\n{tails}")
        time.sleep(0.3)


@contextlib.contextmanager
def slurm_running(root: Path, count: int = 2) -> Iterator[SlurmCluster]:
    """Start munged, slurmctld and `count` slurmd in `root`; stop them all on exit."""
    missing = missing_daemons()
    if missing:
        raise RuntimeError(f"Slurm is not installed here (no {', '.join(missing)}): {INSTALL}")
    nodes = tuple(f"sky{i + 1}" for i in range(count))
    ports = _free_ports(count + 1)
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for name in nodes:
        (root / "spool" / name).mkdir()
    cluster = SlurmCluster(root=root, nodes=nodes)
    (root / "slurm.conf").write_text(_conf(root, nodes, cluster.partition, ports[0], ports[1:]))
    env = cluster.env()
    _start_munge(root)
    try:
        subprocess.run([_which("slurmctld") or "slurmctld", "-i", "-f", cluster.conf], env=env, check=True)
        for name in nodes:
            subprocess.run(
                [_which("slurmd") or "slurmd", "-N", name, "-f", cluster.conf], env=env, check=True
            )
        logs = [root / "slurmctld.log", *(root / f"slurmd-{n}.log" for n in nodes)]
        _await(lambda: _idle(cluster), "nodes not idle", logs)
        yield cluster
    finally:
        _stop(root, nodes, env)


def _idle(cluster: SlurmCluster) -> bool:
    try:
        out = cluster.run("sinfo", "-h", "-N", "-o", "%N %t")
    except subprocess.CalledProcessError:
        return False
    states = dict(line.split() for line in out.splitlines() if line.strip())
    return all(states.get(n, "").startswith("idle") for n in cluster.nodes)


def _stop(root: Path, nodes: tuple[str, ...], env: dict[str, str]) -> None:
    """Cancel every job and let the nodes release them, then stop the daemons, then whatever job
    step (`slurmstepd`) of this cluster outlived its slurmd."""
    with contextlib.suppress(Exception):
        subprocess.run(["scancel", "--user", str(os.getuid())], env=env, timeout=20, capture_output=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            left = subprocess.run(["squeue", "-h"], env=env, timeout=20, capture_output=True, text=True)
            if left.returncode != 0 or not left.stdout.strip():
                break
            time.sleep(0.5)
    pid_files = [root / f"slurmd-{n}.pid" for n in nodes]
    pid_files += [root / "slurmctld.pid", root / "munge" / "munged.pid"]
    pids = []
    for pid_file in pid_files:  # read first: a daemon removes its pid file as it begins to stop
        with contextlib.suppress(OSError, ValueError):
            pids.append(int(pid_file.read_text().strip()))
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for pid in pids:
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in _steps_of(env["SLURM_CONF"]):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _steps_of(conf: str) -> list[int]:
    """The `slurmstepd` processes started for the cluster whose config is `conf`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if not f.read().startswith(b"slurmstepd"):
                    continue
            with open(f"/proc/{name}/environ", "rb") as f:
                if f"SLURM_CONF={conf}".encode() in f.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie (a daemon's parent here may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
