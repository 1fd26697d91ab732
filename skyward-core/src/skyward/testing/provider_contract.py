"""The provider contract as tests: what any provider package can run against its own config.

A provider package subclasses `ProviderContract` in its test suite and gives it its config::

    from skyward.testing.provider_contract import ProviderContract


    class TestMyCloud(ProviderContract):
        nodes = 2

        @pytest.fixture
        def config(self):
            return MyCloud(region="test-1")

pytest then runs every check below against that config: the config is a named value that
cloudpickle round-trips and a `Spec` takes; `create(options)` hands the pool's options to the
provider; `hourly_price` answers a price or None; `shutdown_command` and `end_machine_command`
are commands or None; `sky.plan`'s questions (`planned_instances`, `bootstrap_args`) need no
machine; the lifecycle driven by hand (prepare, provision `nodes` machines, list them, terminate
twice, teardown) lists every machine while it exists and none after; and a real pool on the config
runs a task on every node, while `machines(cluster)` lists exactly the pool's instances, and
leaves nothing once it has stopped, neither for the provider that ran it nor for a fresh one (as
`sky ls` in another process would ask).

A cloud package also mixes in the checks of what works without a pool, each with its fixture:
`SweeperContract` with `sweeper` (its `skyward_sweepers` answer, pointed at the same account:
`sky ls` lists a pool's machines while they run, `sky down` ends them, and the provider then lists
none) and `OfferSourceContract` with `offer_source` (`config.offer_source()` by default: a named
`OfferSource` whose offers are the market's records, priced in USD or not at all, for its own
provider)::

    class TestMyCloud(ProviderContract, SweeperContract, OfferSourceContract): ...

A provider with neither (a fixed set of hosts) leaves them out rather than skipping them.

The checks start real machines: give them a config that points at something cheap (loopback
sshd's, a fake API, local processes). Skyward's own suite runs them against `sky.Local()`,
`sky.SSH` on loopback OpenSSH servers, examples/provider-package, and the fake API of every
cloud it ships (AWS on moto, RunPod, Vast.ai, Verda, Novita).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import cloudpickle
import pytest

import skyward as sky
from skyward.market.offer import Offer
from skyward.market.source import OfferSource
from skyward.options import Options
from skyward.providers.base import Cluster, Instance, Provider, ProviderConfig
from skyward.providers.sweep import Sweeper
from skyward.spec import Spec
from skyward.task.runtime import instance_info

#: The task a contract pool runs: where it ran. Pickled by reference (`skyward.task.runtime`), so a
#: node needs nothing of this module, or of pytest.
where = sky.function(instance_info)


class _Recording(ProviderConfig):
    """A provider config that is `config` in every respect, and remembers each provider it
    created with the cluster `prepare` returned and the event loop it ran on, so that a check can
    ask that very provider for its machines while its pool runs and after it stopped."""

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self.started: list[tuple[Provider, Cluster, asyncio.AbstractEventLoop]] = []

    @property
    def name(self) -> str:
        return str(self.config.name)

    @property
    def default_nodes(self) -> int | None:
        return self.config.default_nodes

    @property
    def mounts_volumes(self) -> bool:  # type: ignore[override]
        return self.config.mounts_volumes

    def check_nodes(self, nodes: Any) -> None:
        self.config.check_nodes(nodes)

    def hourly_price(self, spec: Spec) -> float | None:
        return self.config.hourly_price(spec)

    def missing_credentials(self) -> Any:
        return self.config.missing_credentials()

    def create(self, options: Options | None = None) -> Provider:
        provider = self.config.create(options)
        prepare = provider.prepare

        async def recording_prepare(spec: Spec, pool_id: str) -> Cluster:
            cluster = await prepare(spec, pool_id)
            self.started.append((provider, cluster, asyncio.get_running_loop()))
            return cluster

        provider.prepare = recording_prepare  # type: ignore[method-assign]
        return provider


def _ids(instances: list[Instance]) -> set[str]:
    return {i.id for i in instances}


class ProviderContract:
    """The contract checks; subclass it as `Test...` and override the `config` fixture."""

    #: How many nodes the lifecycle and the pool start (the provider must be able to give that many).
    nodes: ClassVar[int] = 2
    #: Extra `sky.Compute` keywords for the pool check (an image, options...).
    compute_kwargs: ClassVar[dict[str, Any]] = {}
    #: Extra `Spec` keywords for every check (a GPU-only cloud's `accelerator`); the pool gets them too.
    spec_kwargs: ClassVar[dict[str, Any]] = {}

    def spec(self, config: Any, nodes: int) -> Spec:
        return Spec(provider=config, nodes=nodes, **self.spec_kwargs)

    @pytest.fixture
    def config(self) -> Any:
        raise NotImplementedError("a ProviderContract subclass overrides the `config` fixture")

    # -- the config --------------------------------------------------------------------------------

    def test_the_config_is_a_named_value_that_a_spec_takes_and_cloudpickle_ships(self, config: Any) -> None:
        assert isinstance(config.name, str) and config.name
        assert self.spec(config, 1).provider is config
        assert cloudpickle.loads(cloudpickle.dumps(config)) == config  # specs travel with cloudpickle

    def test_create_hands_the_pools_options_to_the_provider(self, config: Any) -> None:
        options = Options(ssh_timeout=7, provision_timeout=11)
        provider = config.create(options)
        assert isinstance(provider, Provider)
        assert provider.options is options

    def test_create_without_options_gives_the_defaults(self, config: Any) -> None:
        assert config.create().options == Options()

    def test_hourly_price_is_a_price_or_none(self, config: Any) -> None:
        price = config.hourly_price(self.spec(config, 1))
        assert price is None or (isinstance(price, int | float) and price >= 0)

    def test_the_shutdown_command_is_a_command_or_none(self, config: Any) -> None:
        command = config.create(Options()).shutdown_command
        assert command is None or (isinstance(command, str) and command.strip())

    def test_the_end_machine_command_is_a_command_or_none(self, config: Any) -> None:
        provider = config.create(Options())
        cluster = Cluster(id="contract-end", provider=config.name, spec=self.spec(config, 1))
        command = provider.end_machine_command(cluster, provider.planned_instances(cluster, [0])[0])
        assert command is None or (isinstance(command, str) and command.strip())

    def test_a_plan_asks_the_provider_without_starting_anything(self, config: Any) -> None:
        provider = config.create(Options())
        spec = self.spec(config, self.nodes)
        cluster = Cluster(id="contract-plan", provider=config.name, spec=spec)
        planned = provider.planned_instances(cluster, list(range(self.nodes)))
        assert [i.node for i in planned] == list(range(self.nodes))
        assert isinstance(provider.bootstrap_args(), dict)

    # -- the lifecycle -------------------------------------------------------------------------------

    def test_the_lifecycle_lists_every_machine_while_it_exists_and_none_after(self, config: Any) -> None:
        async def lifecycle() -> None:
            provider = config.create(Options())
            spec = self.spec(config, self.nodes)
            cluster = await provider.prepare(spec, _pool_id())
            try:
                instances = await provider.provision(cluster, list(range(self.nodes)))
                assert sorted(i.node for i in instances) == list(range(self.nodes))
                assert len(_ids(instances)) == self.nodes
                assert _ids(await provider.machines(cluster)) == _ids(instances)
                await provider.terminate(cluster, instances)
                await provider.terminate(cluster, instances)  # idempotent: gone is fine
                assert await provider.machines(cluster) == []
            finally:
                await provider.teardown(cluster)
            assert await provider.machines(cluster) == []

        asyncio.run(lifecycle())

    def test_a_pool_runs_a_task_on_every_node_and_leaves_nothing(self, config: Any) -> None:
        recording = _Recording(config)
        kwargs: dict[str, Any] = {"console": False, "logging": False, **self.spec_kwargs}
        kwargs.update(self.compute_kwargs)
        with sky.Compute(provider=recording, nodes=self.nodes, **kwargs) as pool:
            infos = where() @ pool
            assert sorted(i.node for i in infos) == list(range(self.nodes))
            assert {i.provider for i in infos} == {config.name}
            provider, cluster, loop = recording.started[-1]
            listed = asyncio.run_coroutine_threadsafe(provider.machines(cluster), loop).result(60)
            assert _ids(listed) == {i.id for i in infos}
        assert asyncio.run(_machines_then_close(provider, cluster)) == []
        fresh = config.create(Options())  # what `sky ls` in another process would find
        assert asyncio.run(_machines_then_close(fresh, cluster)) == []


async def _machines_then_close(provider: Any, cluster: Cluster) -> list[Instance]:
    """The machines `provider` lists for `cluster`, then its API session closed (`close_cloud`,
    where it has one): a check made after the pool ended must not leave a session open behind it."""
    try:
        return list(await provider.machines(cluster))
    finally:
        close = getattr(provider, "close_cloud", None)
        if close is not None:
            await close()


def _pool_id() -> str:
    return f"contract-{uuid.uuid4().hex[:8]}"


async def _swept_by(sweeper: Sweeper, cluster: Cluster, instances: list[Instance]) -> None:
    """`sky ls` lists exactly the pool's machines, `sky down` ends them, and then lists none."""

    async def of_pool() -> list[Any]:
        return [m for m in await asyncio.to_thread(sweeper.machines) if m.pool == cluster.id]

    listed = await of_pool()
    assert {m.id for m in listed} == _ids(instances)
    report = await asyncio.to_thread(sweeper.end, listed, [cluster.id])
    assert not report.failed, report.failed
    assert {e.id for e in report.ended} >= _ids(instances)
    assert await of_pool() == []


class SweeperContract:
    """`sky ls` and `sky down` without a pool: mix into a `ProviderContract` subclass whose provider
    has a sweeper, and override `sweeper`."""

    #: `ProviderContract`'s, which the class this is mixed into supplies.
    nodes: ClassVar[int]
    spec: Callable[[Any, int], Spec]

    @pytest.fixture
    def sweeper(self) -> Sweeper:
        """The provider's `Sweeper` on the config's account."""
        raise NotImplementedError("a SweeperContract subclass overrides the `sweeper` fixture")

    def test_the_sweeper_lists_a_pools_machines_and_ends_them(self, config: Any, sweeper: Any) -> None:
        assert isinstance(sweeper, Sweeper) and sweeper.name
        assert sweeper.credentials().found

        async def swept() -> None:
            provider = config.create(Options())
            cluster = await provider.prepare(self.spec(config, self.nodes), _pool_id())
            instances: list[Instance] = []
            try:
                instances = await provider.provision(cluster, list(range(self.nodes)))
                await _swept_by(sweeper, cluster, instances)  # in a thread: a sweeper runs its own loop
                assert await config.create(Options()).machines(cluster) == []
            finally:
                await provider.terminate(cluster, instances)
                await provider.teardown(cluster)

        asyncio.run(swept())


class OfferSourceContract:
    """`sky offers`: mix into a `ProviderContract` subclass whose provider lists offers."""

    @pytest.fixture
    def offer_source(self, config: ProviderConfig) -> OfferSource:
        """The config's own offers."""
        source = config.offer_source()
        assert source is not None, "an OfferSourceContract's config lists offers (offer_source())"
        return source

    def test_the_offer_source_lists_priced_offers_of_its_provider(self, offer_source: Any) -> None:
        assert isinstance(offer_source, OfferSource)
        assert offer_source.name and offer_source.ttl > 0 and isinstance(offer_source.key, str)
        assert offer_source.credentials().found
        offers = list(offer_source.fetch())
        assert offers and all(isinstance(o, Offer) for o in offers)
        assert {o.provider.lower() for o in offers} == {offer_source.name.lower()}
        assert all(o.instance_type for o in offers)
        assert any(o.price is not None for o in offers), "no offer has a price"
