"""What every cloud provider shares: keys made per pool, pinned host keys, waiting, backoff.

A cloud provider (skyward-aws, skyward-runpod, skyward-vastai, or a third party's) subclasses
`CloudProvider` and writes only what talks to its API:

- `prepare_cloud(spec, pool_id)`: check credentials, pick an offer, create shared resources;
- `launch(cluster, nodes)`: ask for one machine per node; return `Instance`s, addresses unknown yet;
- `refresh(cluster, instances)`: read them back, and return those whose SSH address is known;
- `destroy(cluster, instances)`: delete them (idempotent: gone is fine);
- `release(cluster)`: remove what `prepare_cloud` created;
- `leftovers(cluster)`: the pool's machines the cloud still lists (by tag or name), deleted at
  teardown: the safety net for a creation whose answer never came back. It also backs
  `machines(cluster)` (what `sky ls` lists): the machines this provider launched and has not
  deleted, with whatever the cloud still lists under the pool's tag.
- to let machines linger (`Options(linger=True)`, `providers/linger.py`): `lingers = True`, and
  `resume_cloud(cluster)` if `prepare_cloud` keeps anything on `self` that later calls need (API
  clients, offers): an adopting pool resumes the parked pool's `Cluster` instead of preparing.

The API half's common moves are here too: `launch_together` (every node at once, none left
half-launched), `retry_capacity`, `first_created` (offers tried in order, "no capacity" falling
over to the next) and `confirm_gone` (a deletion waited out until the cloud stops listing it).

Everything after a machine has an address is `RemoteNodes`' (the same SSH transport, bootstrap
and worker as `sky.SSH`). Trust is set up before the machine exists: `MachineAccess` (`access.py`) makes a
login key for the pool (`~/.skyward/keys/<pool>_ed25519`) and a *host* key for the machines, and
the provider hands both to the machine at creation (cloud-init user data, a container's start
command). The pool then pins that host key: a machine that answers with any other key is refused,
so no first connection is ever trusted blindly.
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs
import structlog

from skyward.errors import CapacityError, ProvisionError
from skyward.observe.events import InstanceLaunched, InstanceRunning
from skyward.options import Options
from skyward.providers.access import HOST_KEY_VARIABLE as HOST_KEY_VARIABLE
from skyward.providers.access import MachineAccess as MachineAccess
from skyward.providers.base import Cluster, Instance, NodeSetup, Provider
from skyward.providers.remote import RemoteNodes
from skyward.retry import backoff, retry

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.spec import Spec
    from skyward.transport.ssh import SSHChannel

T = TypeVar("T")
#: An offer a cloud tries (its own record: a product, a type in a location...).
OfferT = TypeVar("OfferT")

#: `Options.provision_timeout` / `provision_retry_delay` when left at None: a cloud machine can
#: take minutes to boot, and capacity often frees up within a few.
DEFAULT_PROVISION_TIMEOUT = 600.0
DEFAULT_RETRY_DELAY = 5.0
#: How often `wait_for_addresses` reads the machines back.
POLL_INTERVAL = 2.0
async def with_backoff(
    attempt: Callable[[], Awaitable[T]],
    *,
    retryable: Callable[[BaseException], bool],
    deadline: float,
    delay: float = DEFAULT_RETRY_DELAY,
    max_attempts: int | None = None,
    what: str = "request",
) -> T:
    """Run `attempt` until it succeeds, retrying what `retryable` accepts with doubling waits
    (capped at 60 s) until `deadline` (monotonic) or `max_attempts`; then raise the last error.
    `skyward.retry` in the terms of `Options` (provision timeout, retry delay, attempts), logged."""
    log = structlog.get_logger()

    def logged(tries: int, exc: BaseException, wait: float) -> None:
        log.info("skyward.provision_retry", what=what, attempt=tries, error=str(exc), wait=round(wait, 2))

    retries = None if max_attempts is None else max(max_attempts - 1, 0)
    return await retry(
        attempt, retry_on=retryable, delays=backoff(delay, cap=60.0, retries=retries), deadline=deadline,
        on_retry=logged,
    )


class ApiClient(Protocol):
    """A cloud's API client as the base sees it: something to close."""

    async def close(self) -> None: ...


class CloudProvider(Provider):
    """The shared half of every cloud provider; subclasses write the API calls (see the module)."""

    name = "cloud"
    #: A node whose client has been gone past `Spec.ttl` powers its machine off with this (its
    #: guardian runs it: `skyward.guardian`).
    shutdown_command: str | None = "sudo shutdown -h now"
    keeps_environments = True
    guards_nodes = True
    announces_machines = True
    #: Whether a clean exit with `Options(linger=True)` parks the machines for the next
    #: compatible pool (`providers/linger.py`); a provider opts in once `resume_cloud` restores
    #: what its later calls need and `cluster.state` holds all its pool created.
    lingers = False
    #: The cloud's API client, when it keeps one open (closed by `close_cloud`).
    api: ApiClient | None = None

    def __init__(self, options: Options | None = None, *, python: str | None = None) -> None:
        super().__init__(options)
        self.nodes = RemoteNodes(python=python, options=self.options)
        self.access: MachineAccess | None = None
        #: The machines launched and not deleted yet, by id: `machines`.
        self._held: dict[str, Instance] = {}
        #: A parked pool's machines this pool adopted and has not placed yet, by node.
        self._adoptable: dict[int, Instance] = {}
        self._log = structlog.get_logger()

    # -- settings ----------------------------------------------------------------------------------

    @property
    def provision_timeout(self) -> float:
        value = self.options.provision_timeout
        return float(value) if value is not None else DEFAULT_PROVISION_TIMEOUT

    @property
    def retry_delay(self) -> float:
        value = self.options.provision_retry_delay
        return float(value) if value is not None else DEFAULT_RETRY_DELAY

    @property
    def max_attempts(self) -> int | None:
        return self.options.max_provision_attempts

    async def retry_capacity(self, attempt: Callable[[], Awaitable[T]], what: str) -> T:
        """`attempt`, retried on `CapacityError` as `Options` says (provision timeout, delay, attempts)."""
        return await with_backoff(
            attempt, retryable=lambda exc: isinstance(exc, CapacityError),
            deadline=time.monotonic() + self.provision_timeout, delay=self.retry_delay,
            max_attempts=self.max_attempts, what=what,
        )

    # -- what a cloud writes ----------------------------------------------------------------------

    @abc.abstractmethod
    async def prepare_cloud(self, spec: Spec, pool_id: str) -> Cluster:
        """Check credentials, choose what to launch, create shared resources; nothing billable."""

    @abc.abstractmethod
    async def launch(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """Ask for one machine per node index, given `self.access`; addresses may be unknown."""

    @abc.abstractmethod
    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        """Read `instances` back; return those now reachable (address and SSH port known).

        Raise `ProvisionError` for one that failed for good (terminated, errored)."""

    @abc.abstractmethod
    async def destroy(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Delete these machines; one already gone is not an error."""

    async def release(self, cluster: Cluster) -> None:
        """Remove what `prepare_cloud` created (security groups, key pairs...)."""

    async def resume_cloud(self, cluster: Cluster) -> None:
        """Restore what `prepare_cloud` keeps on `self` for `cluster`, a parked pool's, without
        creating anything (a pool adopting lingering machines skips `prepare_cloud`). Nothing by
        default."""

    async def close_cloud(self) -> None:
        """Close the API session without deleting anything (the pool's machines are parked):
        the `api` client's `close()`, where the provider has one."""
        if self.api is not None:
            await self.api.close()

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        """Machines of this pool the cloud still has, found by its tag or name (`teardown` deletes
        them). The safety net for a machine whose creation was under way when a start failed or was
        interrupted, so its id never came back: write it for every cloud that can list by tag."""
        return []

    def boot_guardian(self, cluster: Cluster, node: int, end_command: str | None) -> BootGuardian:
        """The guardian `node`'s machine starts at boot (`skyward.guardian.boot`): the pool's ttl,
        an initial lease of bootstrap timeout + ttl, and `end_command` (run from the boot's
        environment, so it may read the container's variables)."""
        from skyward.guardian import initial_lease
        from skyward.guardian.boot import BootGuardian

        spec = cluster.spec
        ttl = float(spec.ttl)
        timeout = self.options.bootstrap_timeout
        if timeout is None:
            timeout = spec.image.bootstrap_timeout
        return BootGuardian(cluster.id, node, ttl, initial_lease(float(timeout), ttl), end_command)

    # -- the Provider contract ---------------------------------------------------------------------

    async def prepare(self, spec: Spec, pool_id: str) -> Cluster:
        from skyward.transport.ssh_connect import pool_key, remove_pool_key

        self.nodes.first_login_timeout = self.provision_timeout  # a new machine's sshd boots late
        adopted = await self._adopt(spec) if self.lingers else None
        if adopted is not None:
            return adopted
        key_file, login_key = pool_key(pool_id)
        self.nodes.key_file = str(key_file)
        self.access = MachineAccess.create(login_key)
        try:
            return await self.prepare_cloud(spec, pool_id)
        except BaseException:
            remove_pool_key(pool_id)  # no cluster, so no teardown: the key would outlive the pool
            raise

    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """Launch, then wait until every machine has an address; on failure delete what started.
        Nodes a parked pool's machines can be are given those instead (`_adopt`)."""
        adopted = [self._adoptable.pop(n) for n in nodes if n in self._adoptable]
        extra, self._adoptable = list(self._adoptable.values()), {}
        if extra:  # the parked pool had more nodes than this one wants
            await asyncio.shield(self._destroy_quietly(cluster, extra))
        for instance in adopted:
            self._held[instance.id] = instance
            self.announce(InstanceRunning(node=instance.node, instance_id=instance.id, ip=instance.public_ip))
        nodes = [n for n in nodes if n not in {i.node for i in adopted}]
        if not nodes:
            return adopted
        return adopted + await self._launch_and_wait(cluster, nodes)

    async def _launch_and_wait(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        launched: list[Instance] = []
        try:
            launched = await self.launch(cluster, nodes)
            self._held.update((i.id, i) for i in launched)
            for instance in launched:
                self.announce(InstanceLaunched(node=instance.node, instance_id=instance.id))
            ready = await self.wait_for_addresses(cluster, launched)
            self._held.update((i.id, i) for i in ready)
            return ready
        except BaseException:
            if launched:
                await asyncio.shield(self._destroy_quietly(cluster, launched))
            raise

    async def launch_together(
        self, cluster: Cluster, nodes: list[int], launch_one: Callable[[int], Awaitable[Instance]]
    ) -> list[Instance]:
        """`launch_one(node)` for every node at once; if any fails for good, the machines the
        others got are deleted before its error is raised (nothing half-launched stays billed).
        A cloud whose machines can all be asked for in parallel writes `launch` with this."""
        results = await asyncio.gather(*(launch_one(n) for n in nodes), return_exceptions=True)
        launched = [r for r in results if isinstance(r, Instance)]
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            if launched:
                await asyncio.shield(self._destroy_quietly(cluster, launched))
            raise failures[0]
        return launched

    async def first_created(
        self,
        node: int,
        offers: Iterable[OfferT],
        create: Callable[[OfferT], Awaitable[Instance]],
        *,
        cloud: str,
        refused: Callable[[list[str]], str] = "; ".join,
    ) -> Instance:
        """`create(offer)` for each offer in order until one is created; only "no capacity" moves on
        to the next (logged `skyward.<name>_no_capacity`, then `_fallback` once one is taken). When
        none has room, a `CapacityError` naming `cloud` and, through `refused`, the offers refused:
        `retry_capacity` tries again until the provision timeout."""
        tried: list[str] = []
        for offer in offers:
            try:
                instance = await create(offer)
            except CapacityError as exc:
                tried.append(str(offer))
                self._log.info(f"skyward.{self.name}_no_capacity", node=node, offer=tried[-1], error=str(exc))
                continue
            if tried:
                self._log.info(f"skyward.{self.name}_fallback", node=node, offer=str(offer), refused=tried)
            return instance
        raise CapacityError(
            f"{cloud} has no capacity for node {node} right now ({refused(tried)}); "
            "it is retried until Options(provision_timeout=...) runs out"
        )

    async def confirm_gone(
        self,
        instances: Sequence[Instance],
        is_gone: Callable[[Instance], Awaitable[bool]],
        *,
        cloud: str,
        timeout: float,
        interval: float,
    ) -> None:
        """Poll `is_gone` until it holds for every instance: a cloud that accepts a delete may list
        (and bill) the machine a while longer. Past `timeout`, a `ProvisionError` names those
        `cloud` still lists, so that someone checks its console."""
        deadline = time.monotonic() + timeout
        waiting = list(instances)
        while waiting:
            done = await asyncio.gather(*(is_gone(i) for i in waiting))
            waiting = [i for i, gone in zip(waiting, done, strict=True) if not gone]
            if not waiting:
                return
            if time.monotonic() >= deadline:
                raise ProvisionError(
                    f"{cloud} still lists {', '.join(i.id for i in waiting)} {timeout:.0f} s after "
                    f"their deletion; check the {cloud} console"
                )
            await asyncio.sleep(interval)

    async def wait_for_addresses(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        """Poll `refresh` until every instance is reachable, within `Options.provision_timeout`."""
        deadline = time.monotonic() + self.provision_timeout
        ready: dict[str, Instance] = {}
        while True:
            waiting = [i for i in instances if i.id not in ready]
            for instance in await self.refresh(cluster, waiting):
                ready[instance.id] = instance
                running = InstanceRunning(node=instance.node, instance_id=instance.id, ip=instance.public_ip)
                self.announce(running)
            if len(ready) == len(instances):
                found = [ready[i.id] for i in instances]
                return [attrs.evolve(i, host_key=self.expected_host_key(i)) for i in found]
            if time.monotonic() >= deadline:
                missing = ", ".join(i.id for i in instances if i.id not in ready)
                raise ProvisionError(
                    f"{self.name}: {missing} had no SSH address after {self.provision_timeout:.0f} s; "
                    "raise Options(provision_timeout=...) or try another region or accelerator"
                )
            await asyncio.sleep(POLL_INTERVAL)

    def expected_host_key(self, instance: Instance) -> str:
        """The host key `instance` must answer with: the one pinned on it (a parked pool's machine,
        adopted) or the one this pool gave its new machines."""
        return instance.host_key or (self.access.host_key_public if self.access else "")

    def python_bin(self, cluster: Cluster) -> str:
        return self.nodes.python_bin()

    def venv_dir(self, cluster: Cluster) -> str:
        return self.nodes.venv_dir()

    def bootstrap_args(self) -> dict[str, Any]:
        """How the bootstrap builds the venv (`python=`: that interpreter, with its site-packages)."""
        return self.nodes.bootstrap_args()

    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> SSHChannel:
        return await self.nodes.start_worker(cluster, instance, setup)

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Delete the machines; whatever ran on them goes with them, once their exit scripts ran
        (a read-write volume's last uploads: `RemoteNodes.run_exit_scripts`)."""
        if cluster.spec.volumes:
            await asyncio.gather(
                *(self.nodes.run_exit_scripts(cluster, instance) for instance in instances),
                return_exceptions=True,
            )
        for instance in instances:
            self.nodes.forget(instance.node)
        await self.destroy(cluster, instances)
        self._let_go(instances)

    async def machines(self, cluster: Cluster) -> list[Instance]:
        """The machines launched and not deleted yet, and any other the cloud lists under this
        pool's tag (`leftovers`): what `sky ls` shows, and what would be billed."""
        found = dict(self._held)
        for instance in await self.leftovers(cluster):
            found.setdefault(instance.id, instance)
        return list(found.values())

    # -- lingering (`providers/linger.py`) ---------------------------------------------------------

    async def park(self, cluster: Cluster, instances: list[Instance], until: float) -> bool:
        """Keep the machines up, idle, until `until` for a compatible pool to adopt: their lease
        is marked with `until` (where the cloud keeps one), the record written, the SSH sessions
        closed (the guardians' lease is no longer renewed, so they end the machines at `until`).
        Not with volumes: a read-write volume's last upload runs when its machine is deleted."""
        from skyward.providers import linger

        if not self.lingers or not instances or cluster.spec.volumes:
            return False
        try:
            await self.renew_lease(cluster, instances, until)
        except Exception as exc:  # noqa: BLE001 - the guardians still end them at `until`
            self._log.warning("skyward.park_lease_failed", pool=cluster.id, error=str(exc))
        digest = linger.compatibility(self.name, cluster.spec)
        try:
            linger.park(linger.Parked(cluster.id, self.name, digest, until, cluster, tuple(instances)))
        except OSError as exc:
            self._log.warning("skyward.park_failed", pool=cluster.id, error=str(exc))
            return False
        await self.nodes.close()
        await self.close_cloud()
        self._let_go(instances)
        return True

    async def hold(self, cluster: Cluster, instances: list[Instance]) -> bool:
        """A held record of the running pool (a pool server's, `linger.hold`); removed at teardown."""
        from skyward.providers import linger

        if not self.lingers or not instances:
            return False
        digest = linger.compatibility(self.name, cluster.spec)
        linger.hold(linger.Parked(cluster.id, self.name, digest, 0.0, cluster, tuple(instances)))
        return True

    async def _adopt(self, spec: Spec) -> Cluster | None:
        """Resume a parked pool whose machines fit `spec` (`linger.claim`): its cluster, its login
        key, and those of its machines the cloud still has up, kept for `provision`. None when
        there is none, or it cannot be resumed (its machines then end at their expiry)."""
        from skyward.providers import linger
        from skyward.transport.ssh_connect import pool_key, remove_pool_key

        record = linger.claim(self.name, linger.compatibility(self.name, spec))
        if record is None:
            return None
        if not linger.key_kept(record.pool):
            self._log.warning("skyward.adopt_failed", pool=record.pool, error="its login key is gone")
            return None
        cluster = attrs.evolve(record.cluster, spec=spec)
        pinned = {i.id: i for i in record.instances}
        try:
            key_file, login_key = pool_key(record.pool)
            self.nodes.key_file = str(key_file)
            self.access = MachineAccess.create(login_key)
            await self.resume_cloud(cluster)
            alive = await self.refresh(cluster, list(record.instances))
        except Exception as exc:  # noqa: BLE001 - a fresh pool is made instead
            self._log.warning("skyward.adopt_failed", pool=record.pool, error=str(exc))
            self.access = None
            remove_pool_key(record.pool)
            return None
        self._adoptable = {
            i.node: attrs.evolve(i, host_key=pinned[i.id].host_key) for i in alive if i.id in pinned
        }
        self._log.info(
            "skyward.pool_adopted", pool=record.pool, provider=self.name,
            instances=", ".join(i.id for i in self._adoptable.values()), seconds_left=round(record.left()),
        )
        return cluster

    def _let_go(self, instances: Sequence[Instance]) -> None:
        for instance in instances:
            self._held.pop(instance.id, None)

    async def teardown(self, cluster: Cluster) -> None:
        from skyward.providers import linger
        from skyward.transport.ssh_connect import remove_pool_key

        linger.unhold(cluster.id)
        try:
            await self.nodes.close()
            left = await self.leftovers(cluster)
            if left:
                self._log.warning(
                    "skyward.cloud_leftovers", provider=self.name, instances=", ".join(i.id for i in left)
                )
                await self.destroy(cluster, left)
                self._let_go(left)
            await self.release(cluster)
        finally:
            remove_pool_key(cluster.id)

    async def _destroy_quietly(self, cluster: Cluster, instances: Sequence[Instance]) -> None:
        try:
            await self.destroy(cluster, list(instances))
            self._let_go(instances)
        except Exception as exc:  # noqa: BLE001 - reported; the launch error is the one raised
            ids = ", ".join(i.id for i in instances)
            self._log.error("skyward.cloud_destroy_failed", provider=self.name, instances=ids, error=str(exc))
