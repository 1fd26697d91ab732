"""The work of one Slurm pool: one job holds the nodes, one `srun` step per node runs its worker.

- `prepare`: reach the place where Slurm's commands work (here, or the login node over SSH);
  refuse what a cluster cannot do (`Image.apt`: no root).
- `provision`: `sbatch` the job (`job.batch_script`: the guardian that holds the allocation),
  then wait for it to run, telling the console it is queued and why (`Priority`, `Resources`),
  at most `Options.provision_timeout` seconds. Node i is the job's i-th node.
- `connect`: build the venv once per pool in the shared home folder (warm across pools per image,
  `~/.skyward/envs`), then start the node's worker as an `srun --overlap` step whose standard
  streams are the worker's channel.
- the job's lease is moved ahead several times per `Spec.ttl` while the pool lives, so the job
  outlives a killed client by `ttl` and the guardian's few seconds; `terminate`/`teardown`
  cancel the job (`scancel`) and remove the pool's folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
from typing import TYPE_CHECKING, Any

import structlog

from skyward.errors import ConfigurationError, ProvisionError
from skyward.observe.events import InstanceLaunched, InstanceRunning
from skyward.options import Options
from skyward.providers.base import Cluster, Instance, NodeSetup, Provider
from skyward.providers.remote import ENVIRONMENTS, relative_python
from skyward.providers.ssh import head_port
from skyward_slurm import job as jobs
from skyward_slurm.place import LocalPlace, Place, SSHPlace, srun_line, step_cancel

if TYPE_CHECKING:
    from skyward.spec import Spec
    from skyward.transport.base import Channel
    from skyward_slurm.config import Slurm

#: `Options.provision_timeout` left at None: how long a job may wait in the queue.
DEFAULT_QUEUE_TIMEOUT = 3600.0
#: How often the queue is asked about a waiting job (seconds).
QUEUE_POLL = 1.0
#: A lease for `Spec(ttl=0)` (no grace period): the job ends with its `--time` or its pool.
NO_LEASE = 10 * 365 * 86400
LOGIN_TIMEOUT = 20.0
#: The least a lease reaches ahead (seconds): the job's guardian reads it every few seconds.
LEASE_MARGIN = 3.0


class SlurmProvider(Provider):
    name = "slurm"
    announces_machines = True
    #: The nodes keep the venv an image built between pools (in the shared home folder).
    keeps_environments = True
    release_timeout = 60.0

    def __init__(self, config: Slurm, options: Options | None = None) -> None:
        super().__init__(options)
        self.config = config
        self._place: Place | None = None
        self._job: str | None = None
        self._instances: dict[int, Instance] = {}
        self._script: Any = None
        self._keeper: asyncio.Future[None] | None = None
        self._launches = 0
        self._bootstrap_lock = asyncio.Lock()
        self._log = structlog.get_logger()

    # -- where Slurm runs --------------------------------------------------------------------------

    @property
    def place(self) -> Place:
        if self._place is None:
            raise RuntimeError("SlurmProvider: prepare() was not called")
        return self._place

    def pool_dir(self, cluster: Cluster) -> str:
        return f"{self.place.home}/.skyward/slurm/{cluster.id}"

    def workdir(self, cluster: Cluster) -> str:
        """The folder every node's worker starts in: the venv, env.sh, wheels and includes."""
        return f"{self.pool_dir(cluster)}/node"

    async def _run(self, command: str, what: str, timeout: float = 60.0) -> str:
        result = await self.place.run(command, timeout=timeout)
        if result.code != 0:
            raise ProvisionError(
                f"Slurm: {what} failed on {self.place.label} (exit {result.code}): "
                f"{(result.stderr or result.stdout).strip()[-1500:]}"
            )
        return result.stdout

    # -- lifecycle ---------------------------------------------------------------------------------

    async def prepare(self, spec: Spec, pool_id: str) -> Cluster:
        if spec.image.apt:
            raise ConfigurationError(
                f"Slurm cannot install system packages (Image.apt={list(spec.image.apt)}): a cluster "
                "gives no root. Load them as modules, ask the cluster's admins, or use Image.pip."
            )
        if self.config.login is None:
            self._place = LocalPlace()
        else:
            self._place = await SSHPlace.open(
                self.config.login,
                key_file=self.config.key_file,
                known_hosts=self.config.known_hosts,
                timeout=min(float(self.options.ssh_timeout or LOGIN_TIMEOUT), LOGIN_TIMEOUT),
            )
        missing = await self.place.run(
            "for c in sbatch srun squeue scancel scontrol sinfo; do command -v $c >/dev/null || echo $c; done"
        )
        if missing.stdout.split():
            await self.place.close()
            raise ConfigurationError(
                f"Slurm: {', '.join(missing.stdout.split())} not found on {self.place.label}: run the "
                "client on a login node, set SLURM_CONF, or pass Slurm(login='user@login.cluster')"
            )
        cluster = Cluster(id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id))
        await self._run(f"mkdir -p {shlex.quote(self.workdir(cluster))}", "creating the pool's folder")
        return cluster

    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        if self._job is not None:
            return self._same_job(nodes)
        spec = cluster.spec
        count = max(nodes) + 1
        await self._write_lease(cluster, self._lease_ahead(spec))
        self._keeper = asyncio.ensure_future(self._keep_lease(cluster))
        pool_dir = self.pool_dir(cluster)
        script = jobs.batch_script(cluster.id, pool_dir, self.config.sbatch_options(spec, count))
        path = f"{pool_dir}/job.sh"
        await self.place.run(f"cat > {shlex.quote(path)}", stdin=script)
        out = await self._run(f"sbatch --parsable {shlex.quote(path)}", "sbatch")
        self._job = out.strip().split(";")[0]
        self._log.info("skyward.slurm_submitted", job=self._job, nodes=count)
        state = await self._await_running(cluster, nodes)
        facts = jobs.parse_nodes(
            await self._run(jobs.nodes_command(state.nodelist), "listing the job's nodes")
        )
        names = list(facts)
        if len(names) < count:
            raise ProvisionError(f"Slurm job {self._job} runs on {len(names)} node(s), {count} asked for")
        for i, name in enumerate(names):
            fact = facts[name]
            self._instances[i] = Instance(
                id=name,
                node=i,
                public_ip=fact.address,
                private_ip=fact.address,
                instance_type=f"slurm job {self._job}",
                vcpus=fact.cpus,
                memory_gb=fact.memory_gb,
            )
        found = [self._instances[i] for i in nodes]
        for instance in found:
            self.announce(
                InstanceRunning(node=instance.node, instance_id=instance.id, ip=instance.private_ip)
            )
        return found

    def _same_job(self, nodes: list[int]) -> list[Instance]:
        """A node asked again (its worker lost) is the job's same node; a job cannot grow."""
        beyond = [n for n in nodes if n not in self._instances]
        if beyond:
            raise ProvisionError(
                f"Slurm job {self._job} holds {len(self._instances)} node(s); node(s) {beyond} would need "
                "a larger job: start the pool with nodes= as large as it may grow"
            )
        return [self._instances[n] for n in nodes]

    def _queue_timeout(self) -> float:
        value = self.options.provision_timeout
        return float(value) if value is not None else DEFAULT_QUEUE_TIMEOUT

    @staticmethod
    def _lease_ahead(spec: Spec) -> float:
        """Until when the job may live without another word from this client."""
        ttl = float(spec.ttl)
        return time.time() + (max(ttl, 2 * LEASE_MARGIN) if ttl else NO_LEASE)

    async def _keep_lease(self, cluster: Cluster) -> None:
        """Move the job's lease ahead several times per `ttl`, from submission on (a job that
        starts after its client died finds its lease lapsed and ends at once)."""
        from skyward.guardian import renew_interval

        interval = renew_interval(float(cluster.spec.ttl))
        while True:
            await asyncio.sleep(interval)
            try:
                await self._write_lease(cluster, self._lease_ahead(cluster.spec))
            except Exception as exc:  # noqa: BLE001 - the lease outlasts several renewals
                self._log.warning("skyward.slurm_lease_failed", error=str(exc))

    async def _await_running(self, cluster: Cluster, nodes: list[int]) -> jobs.JobState:
        """Poll `squeue` until the job runs; say why it waits; give up after the queue timeout."""
        assert self._job is not None
        deadline = time.monotonic() + self._queue_timeout()
        told = ""
        while True:
            found = jobs.parse_queue((await self.place.run(jobs.queue_command(self._job))).stdout)
            state = found[0] if found else None
            if state is not None and state.state == "RUNNING" and state.nodelist:
                return state
            if state is None or state.state in jobs.ENDED:
                why = "it left the queue" if state is None else f"{state.state} ({state.reason})"
                raise ProvisionError(
                    f"Slurm job {self._job} ended before it ran: {why}; see {self.pool_dir(cluster)}"
                )
            seen = f"{state.state}:{state.reason}"
            if seen != told:
                told = seen
                self._log.info("skyward.slurm_queued", job=self._job, state=state.state, reason=state.reason)
                for node in nodes:
                    label = f"slurm job {self._job}, {state.state.lower()} ({state.reason})"
                    self.announce(InstanceLaunched(node=node, instance_id=label))
            if time.monotonic() > deadline:
                raise ProvisionError(
                    f"Slurm job {self._job} still {state.state.lower()} ({state.reason}) after "
                    f"{self._queue_timeout():.0f}s: raise Options(provision_timeout=...), ask for fewer "
                    "nodes, or pick another partition"
                )
            await asyncio.sleep(QUEUE_POLL)

    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> Channel:
        assert self._job is not None
        script = await self._bootstrapped(cluster, instance, setup)
        self._launches += 1
        base = f"{self.pool_dir(cluster)}/worker-{self._launches}"
        command = srun_line(
            self._job,
            instance.id,
            self.workdir(cluster),
            script.launch_line(setup.launch),
            self.config.gres(cluster.spec),
            f"{base}.step",
        )
        label = f"node {instance.node} ({instance.id}, job {self._job})"
        return await self.place.channel(command, label, f"{base}.pid", step_cancel(self._job, f"{base}.step"))

    async def _bootstrapped(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> Any:
        """The pool's bootstrap, run once in the shared home folder for every node."""
        async with self._bootstrap_lock:
            if self._script is None:
                from skyward.bootstrap.prepare import prepare_node

                workdir = self.workdir(cluster)
                self._script = await prepare_node(
                    self.place.runner(f"{workdir}/bootstrap.pid"),
                    setup,
                    node=instance.node,
                    workdir=workdir,
                    environments_root=f"{self.place.home}/{ENVIRONMENTS}",
                    **self.bootstrap_args(),
                )
            return self._script

    async def renew_lease(self, cluster: Cluster, instances: list[Instance], until: float) -> None:
        """Nothing more: the provider's own renewal (`_keep_lease`) holds the lease to `ttl`."""
        return None

    async def _write_lease(self, cluster: Cluster, until: float) -> None:
        path = f"{self.pool_dir(cluster)}/lease"
        tmp = f"{path}.{int(time.time() * 1000)}"
        q = shlex.quote
        await self.place.run(f"cat > {q(tmp)} && mv -f {q(tmp)} {q(path)}", stdin=f"{int(until)}\n")

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        """End the job once every node of it is let go (a job cannot shrink); idempotent."""
        for instance in instances:
            self._instances.pop(instance.node, None)
        if not self._instances:
            await self._cancel(cluster)

    async def _cancel(self, cluster: Cluster) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
        job, self._job = self._job, None
        if job is None or self._place is None:
            return
        result = await self.place.run(f"scancel {shlex.quote(job)}")
        if result.code != 0:
            self._log.warning("skyward.slurm_cancel_failed", job=job, error=result.stderr.strip())

    async def teardown(self, cluster: Cluster) -> None:
        if self._place is None:
            return
        try:
            await self._cancel(cluster)
            with contextlib.suppress(Exception):
                await self.place.run(f"rm -rf {shlex.quote(self.pool_dir(cluster))}")
        finally:
            await self.place.close()

    async def machines(self, cluster: Cluster) -> list[Instance]:
        return list(self._instances.values())

    def end_machine_command(self, cluster: Cluster, instance: Instance) -> str | None:
        """The job's batch script is its guardian (`scancel` of its own job): nothing per node."""
        return None

    def bootstrap_args(self) -> dict[str, Any]:
        return {"python": self.config.python, "system_site_packages": self.config.python is not None}

    def python_bin(self, cluster: Cluster) -> str:
        return relative_python(self.config.python)

    def venv_dir(self, cluster: Cluster) -> str:
        return relative_python(self.config.python).rsplit("/bin/", 1)[0]
