"""`CloudProvider`, the half every cloud shares, on a toy cloud whose machines are loopback sshd's.

The toy cloud is what a third-party provider writes: `launch` asks for machines (here it starts an
OpenSSH server per node, given the host key and login key the pool made, as cloud-init or a
container's start command would install them), `refresh` reports their addresses, `destroy`
stops them. Everything else (keys, pinning, waiting, clean-up on failure) is the base's.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import itertools
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from ssh_hosts import SSHServer, free_port, loopback, start_machine, workers_of

import skyward as sky
from skyward.errors import CapacityError, HostKeyError, ProvisionError
from skyward.observe.logging import registered_secrets
from skyward.providers.base import Cluster, Instance, ProviderConfig
from skyward.providers.cloud import CloudProvider, MachineAccess, with_backoff

_addresses = itertools.count(2)


@attrs.define
class ToyCloud:
    """The cloud's side: its machines by id, and what it was asked to do."""

    folder: Path
    machines: dict[str, SSHServer] = attrs.field(factory=dict)
    timers: list[threading.Timer] = attrs.field(factory=list)
    destroyed: list[str] = attrs.field(factory=list)
    released: list[str] = attrs.field(factory=list)
    #: Answer with this host key instead of the one the pool handed over (an impostor).
    impostor_key: str | None = None
    #: Never give the machines an address.
    never_ready: bool = False
    #: Fail the API call that creates this node's machine, after the earlier ones were created.
    fail_at_node: int | None = None
    #: Fail every delete (an API outage at the end).
    refuse_deletes: bool = False
    #: Refuse the account (bad credentials) in `prepare_cloud`.
    refuse_account: bool = False
    #: Seconds between a machine getting its address and its sshd answering (a slow boot).
    boot_delay: float = 0.0

    def stop(self) -> None:
        for timer in self.timers:
            timer.cancel()
        for server in self.machines.values():
            server.stop()


class ToyProvider(CloudProvider):
    name = "toy"

    def __init__(self, cloud: ToyCloud, options: Any = None) -> None:
        super().__init__(options, python=__import__("sys").executable)
        self.cloud = cloud

    async def prepare_cloud(self, spec: Any, pool_id: str) -> Cluster:
        if self.cloud.refuse_account:
            raise ProvisionError("the toy cloud does not know this account")
        return Cluster(id=pool_id, provider=self.name, spec=spec)

    async def launch(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        assert self.access is not None
        instances = []
        for node in nodes:
            if node == self.cloud.fail_at_node:
                raise ProvisionError(f"the toy cloud refused node {node}")
            machine_id = f"{cluster.id}-m{node}"
            address = loopback(3, next(_addresses))
            host_key = self.cloud.impostor_key or self.access.host_key
            boot = functools.partial(
                start_machine, self.cloud.folder / machine_id, address, free_port(address), host_key,
                self.access.login_key,
            )
            if self.cloud.boot_delay:
                server = await asyncio.to_thread(boot, start=False)
                booting = threading.Timer(self.cloud.boot_delay, server.boot)
                booting.start()
                self.cloud.timers.append(booting)
            else:
                server = await asyncio.to_thread(boot)
            self.cloud.machines[machine_id] = server
            instances.append(Instance(id=machine_id, node=node, ssh_user=server.user, hourly_rate=36.0))
        return instances

    async def refresh(self, cluster: Cluster, instances: list[Instance]) -> list[Instance]:
        if self.cloud.never_ready:
            return []
        ready = []
        for instance in instances:
            server = self.cloud.machines[instance.id]
            ready.append(attrs.evolve(
                instance, public_ip=server.address, private_ip=server.address, ssh_port=server.port
            ))
        return ready

    async def destroy(self, cluster: Cluster, instances: list[Instance]) -> None:
        if self.cloud.refuse_deletes:
            raise ProvisionError("the toy cloud's API is down")
        for instance in instances:
            server = self.cloud.machines.pop(instance.id, None)
            if server is not None:
                await asyncio.to_thread(server.stop)
                self.cloud.destroyed.append(instance.id)

    async def release(self, cluster: Cluster) -> None:
        self.cloud.released.append(cluster.id)

    async def leftovers(self, cluster: Cluster) -> list[Instance]:
        return [Instance(id=i, node=-1) for i in self.cloud.machines if i.startswith(f"{cluster.id}-")]


@attrs.frozen
class Toy(ProviderConfig):
    cloud: ToyCloud = attrs.field(eq=False)

    @property
    def name(self) -> str:
        return "toy"

    def create(self, options: Any = None) -> ToyProvider:
        return ToyProvider(self.cloud, options)

    def hourly_price(self, spec: Any) -> float | None:
        return 36.0


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    toy = ToyCloud(tmp_path / "machines")
    try:
        yield toy
    finally:
        toy.stop()


def toy_pool(cloud: ToyCloud, **kwargs: Any) -> sky.Compute:
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=Toy(cloud), **kwargs)


@sky.function
def where() -> tuple[int, str]:
    import os

    return sky.instance_info().node, os.environ["HOME"]


def test_a_pool_on_a_cloud_runs_on_its_machines_and_deletes_them_on_exit(
    cloud: ToyCloud, tmp_path: Path
) -> None:
    with toy_pool(cloud, nodes=2) as pool:
        homes = {server.home for server in cloud.machines.values()}
        answers = where() @ pool
        assert sorted(node for node, _ in answers) == [0, 1]
        assert {home for _, home in answers} == {str(h) for h in homes}
        pool_id = pool.name
    assert sorted(cloud.destroyed) == [f"{pool_id}-m0", f"{pool_id}-m1"]
    assert cloud.released == [pool_id]
    assert not any(workers_of(home) for home in homes)
    assert not list((tmp_path / "skyward-home" / "keys").glob("*")), "the pool's login key outlived it"


@sky.function
def count_and_meet(name: str) -> tuple[int, int]:
    """A strong counter and a barrier shared by the cloud's machines, through the client."""
    for _ in range(25):
        sky.counter(name).increment()
    sky.barrier(name, 2).wait()
    return sky.instance_info().node, sky.counter(name).value


def test_the_machines_of_a_cloud_share_the_pools_collections(cloud: ToyCloud) -> None:
    with toy_pool(cloud, nodes=2) as pool:
        assert sorted(count_and_meet("on-the-cloud") @ pool) == [(0, 50), (1, 50)]


def test_a_machine_answering_with_another_host_key_is_refused_and_still_deleted(cloud: ToyCloud) -> None:
    import asyncssh

    cloud.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    with pytest.raises(HostKeyError), toy_pool(cloud, nodes=1, options=sky.Options(ssh_timeout=5)):
        pass
    assert cloud.machines == {}
    assert len(cloud.destroyed) == 1


def test_machines_that_never_get_an_address_are_deleted_when_provisioning_times_out(
    cloud: ToyCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("skyward.providers.cloud.POLL_INTERVAL", 0.05)
    cloud.never_ready = True
    with pytest.raises(sky.ProvisionError, match="provision_timeout"):
        with toy_pool(cloud, nodes=2, options=sky.Options(provision_timeout=1)):
            pass
    assert cloud.machines == {}
    assert len(cloud.destroyed) == 2


def test_a_machine_whose_launch_never_answered_is_found_by_its_pool_id_and_deleted(cloud: ToyCloud) -> None:
    cloud.fail_at_node = 1  # node 0's machine exists, but `launch` raised before returning it
    with pytest.raises(ProvisionError, match="refused node 1"), toy_pool(cloud, nodes=2):
        pass
    assert cloud.machines == {}
    assert [i.rsplit("-", 1)[1] for i in cloud.destroyed] == ["m0"]


def test_machines_lists_what_was_launched_until_it_is_deleted(cloud: ToyCloud) -> None:
    async def lifecycle() -> list[set[str]]:
        provider = Toy(cloud).create(sky.Options())
        cluster = await provider.prepare(sky.Spec(provider=Toy(cloud), nodes=2), "listed")
        listed = []
        try:
            instances = await provider.provision(cluster, [0, 1])
            listed.append({i.id for i in await provider.machines(cluster)})
            await provider.terminate(cluster, instances[:1])
            listed.append({i.id for i in await provider.machines(cluster)})
            await provider.terminate(cluster, instances[1:])
            listed.append({i.id for i in await provider.machines(cluster)})
        finally:
            await provider.teardown(cluster)
        return listed

    assert asyncio.run(lifecycle()) == [{"listed-m0", "listed-m1"}, {"listed-m1"}, set()]


def test_machines_also_lists_what_the_cloud_has_under_the_pools_name_until_teardown(cloud: ToyCloud) -> None:
    cloud.fail_at_node = 1  # node 0's machine exists, but `launch` raised before returning it

    async def lifecycle() -> list[list[str]]:
        provider = Toy(cloud).create(sky.Options())
        cluster = await provider.prepare(sky.Spec(provider=Toy(cloud), nodes=2), "orphan")
        with pytest.raises(ProvisionError):
            await provider.provision(cluster, [0, 1])
        before = [i.id for i in await provider.machines(cluster)]
        await provider.teardown(cluster)
        return [before, [i.id for i in await provider.machines(cluster)]]

    assert asyncio.run(lifecycle()) == [["orphan-m0"], []]


def test_a_failed_delete_is_reported_naming_the_machines_and_the_pool_still_exits(cloud: ToyCloud) -> None:
    events: list[Any] = []
    with toy_pool(cloud, nodes=1, on_event=events.append) as pool:
        assert where() >> pool
        cloud.refuse_deletes = True
        machine = next(iter(cloud.machines))
    errors = [e.message for e in events if isinstance(e, sky.Error)]
    assert any(f"could not terminate {machine}" in m and "API is down" in m for m in errors), errors


def test_the_pool_reports_what_its_machines_cost_when_it_closes(cloud: ToyCloud) -> None:
    events: list[Any] = []
    started = time.monotonic()
    with toy_pool(cloud, nodes=2, on_event=events.append):
        pass
    held = time.monotonic() - started
    [closed] = [e for e in events if isinstance(e, sky.ClusterDestroyed)]
    assert 0 < closed.seconds <= held
    assert 0 < closed.cost <= 2 * 36.0 * held / 3600  # two machines at $36 an hour, at most that long


def test_a_cloud_that_refuses_the_account_leaves_no_pool_key_behind(cloud: ToyCloud, tmp_path: Path) -> None:
    cloud.refuse_account = True
    with pytest.raises(ProvisionError, match="does not know this account"), toy_pool(cloud, nodes=1):
        pass
    assert not list((tmp_path / "skyward-home" / "keys").glob("*"))


def test_a_machine_whose_sshd_boots_after_ssh_timeout_is_waited_for_within_provision_timeout(
    cloud: ToyCloud,
) -> None:
    cloud.boot_delay = 4.0  # sshd answers 4 s after the machine has its address
    options = sky.Options(ssh_timeout=1, ssh_retry_interval=1, provision_timeout=60)
    with toy_pool(cloud, nodes=1, options=options) as pool:
        assert where() >> pool


def test_launching_together_deletes_what_the_other_nodes_got_when_one_fails(cloud: ToyCloud) -> None:
    deleted: list[str] = []

    class Recording(ToyProvider):
        async def destroy(self, cluster: Cluster, instances: list[Instance]) -> None:
            deleted.extend(i.id for i in instances)

    async def launch_one(node: int) -> Instance:
        await asyncio.sleep(0.01 * node)
        if node == 1:
            raise CapacityError("no room for node 1")
        return Instance(id=f"m{node}", node=node)

    provider = Recording(cloud)
    cluster = Cluster(id="p", provider="toy", spec=None)
    with pytest.raises(CapacityError, match="node 1"):
        asyncio.run(provider.launch_together(cluster, [0, 1, 2], launch_one))
    assert sorted(deleted) == ["m0", "m2"]


# -- the keys ----------------------------------------------------------------------------------------


def test_the_machine_access_keeps_its_private_host_key_out_of_repr_and_logs() -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAlogin pool")
    assert "PRIVATE" not in repr(access)
    assert access.host_key_b64 in registered_secrets()
    body = [line for line in access.host_key.splitlines() if not line.startswith("-----")]
    assert all(line in registered_secrets() for line in body if len(line) > 20)


def test_cloud_init_user_data_installs_our_host_key_and_authorises_the_login_key() -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAlogin pool")
    data = access.cloud_config()
    assert data.startswith("#cloud-config\n")
    config = yaml.safe_load(data)
    assert config["ssh_keys"]["ed25519_private"].strip() == access.host_key.strip()
    assert config["ssh_keys"]["ed25519_public"] == access.host_key_public
    assert config["ssh_authorized_keys"] == [access.login_key]
    assert config["ssh_deletekeys"] is True


def test_cloud_init_user_data_runs_the_given_commands_as_the_login_user_before_the_guardian() -> None:
    from skyward.guardian.boot import BootGuardian

    access = MachineAccess.create("ssh-ed25519 AAAAlogin pool")
    guardian = BootGuardian("pool-1", 0, 60.0, 120.0, "true")
    config = yaml.safe_load(access.cloud_config(guardian, user="ubuntu", commands=["echo kept"]))
    first, second = config["runcmd"]
    assert first == ["su", "-", "ubuntu", "-c", "echo kept"]
    assert second[:4] == ["su", "-", "ubuntu", "-c"] and "python3" in second[4]


def test_a_containers_start_script_installs_our_host_key_as_the_only_one(tmp_path: Path) -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAlogin pool")
    ssh_dir, home = tmp_path / "etc-ssh", tmp_path / "root"
    ssh_dir.mkdir()
    (ssh_dir / "ssh_host_rsa_key").write_text("the image's own key")
    (ssh_dir / "ssh_host_rsa_key.pub").write_text("ssh-rsa AAAA image")
    subprocess.run(
        ["bash", "-c", access.container_script(ssh_dir=str(ssh_dir), home=str(home))],
        env={"SKYWARD_SSH_HOST_KEY": access.host_key_b64, "PATH": "/usr/bin:/bin"}, check=True,
    )
    assert sorted(p.name for p in ssh_dir.iterdir()) == ["ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"]
    assert (ssh_dir / "ssh_host_ed25519_key").read_text() == access.host_key
    assert (ssh_dir / "ssh_host_ed25519_key").stat().st_mode & 0o777 == 0o600
    assert (ssh_dir / "ssh_host_ed25519_key.pub").read_text().strip() == access.host_key_public
    assert (home / ".ssh" / "authorized_keys").read_text() == access.login_key + "\n"
    assert base64.b64decode(access.host_key_b64).decode() == access.host_key


# -- retrying ----------------------------------------------------------------------------------------


def test_capacity_errors_are_retried_until_the_cloud_has_room() -> None:
    calls = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise CapacityError("no capacity")
        return "machine"

    result = asyncio.run(with_backoff(
        attempt, retryable=lambda e: isinstance(e, CapacityError), deadline=time.monotonic() + 10, delay=0.01
    ))
    assert (result, len(calls)) == ("machine", 3)


def test_an_error_that_is_not_retryable_is_raised_at_once() -> None:
    calls = []

    async def attempt() -> str:
        calls.append(1)
        raise ProvisionError("account suspended")

    with pytest.raises(ProvisionError, match="suspended"):
        asyncio.run(with_backoff(
            attempt, retryable=lambda e: isinstance(e, CapacityError), deadline=time.monotonic() + 10,
            delay=0.01,
        ))
    assert len(calls) == 1


def test_retrying_stops_after_max_attempts_with_the_last_error() -> None:
    calls = []

    async def attempt() -> str:
        calls.append(1)
        raise CapacityError(f"no capacity ({len(calls)})")

    with pytest.raises(sky.CapacityError, match=r"\(2\)"):
        asyncio.run(with_backoff(
            attempt, retryable=lambda e: isinstance(e, CapacityError), deadline=time.monotonic() + 10,
            delay=0.01, max_attempts=2,
        ))
