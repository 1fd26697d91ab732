"""Host keys are always verified; credentials and reachability failures name the host."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import asyncssh
import attrs
import pytest
from ssh_hosts import SSHHosts, free_port, loopback, ssh_pool, ssh_provider, write_key

import skyward as sky
from skyward.providers.base import Cluster, Instance, Provider, ProviderConfig
from skyward.providers.remote import RemoteNodes
from skyward.transport.ssh_connect import SSHAuthError, connect


def test_a_changed_host_key_is_refused_naming_host_and_fingerprint(
    ssh_hosts: SSHHosts, tmp_path: Path
) -> None:
    server = ssh_hosts.servers[0]
    impostor = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    known = tmp_path / "known_hosts"
    known.write_text(f"[{server.address}]:{server.port} {impostor}\n")
    compute = ssh_pool(ssh_hosts, provider=ssh_provider(ssh_hosts, servers=[0], known_hosts=str(known)))
    with pytest.raises(sky.HostKeyError) as caught:
        compute.start()
    message = str(caught.value)
    assert server.target.split("@")[1] in message
    assert server.host_key.get_fingerprint() in message  # the key the host actually showed
    assert "does not match" in message and "ssh-keygen -R" in message


def test_an_unknown_host_is_refused_with_how_to_trust_it(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    compute = ssh_pool(ssh_hosts, provider=ssh_provider(ssh_hosts, servers=[1], known_hosts=str(known)))
    with pytest.raises(sky.HostKeyError, match="not listed") as caught:
        compute.start()
    server = ssh_hosts.servers[1]
    assert f"ssh-keyscan -p {server.port} {server.address}" in str(caught.value)
    assert ssh_hosts.servers[1].host_key.get_fingerprint() in str(caught.value)


def test_a_missing_known_hosts_file_trusts_nothing(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    server = ssh_hosts.servers[0]
    with pytest.raises(sky.HostKeyError, match="does not exist"):
        asyncio.run(connect(server.address, server.port, server.user, key_file=ssh_hosts.key_file,
                            known_hosts=tmp_path / "nowhere"))


def test_a_pinned_host_key_is_checked(ssh_hosts: SSHHosts) -> None:
    """Cloud instances pin the key their API reported (`Instance.host_key`) instead of known_hosts."""
    server = ssh_hosts.servers[0]
    right = server.host_key.export_public_key().decode().strip()
    wrong = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()

    async def attempt(host_key: str) -> str:
        conn = await connect(
            server.address, server.port, server.user, key_file=ssh_hosts.key_file, host_key=host_key
        )
        async with conn:
            return str((await conn.run("echo pinned", check=True)).stdout).strip()

    assert asyncio.run(attempt(right)) == "pinned"
    with pytest.raises(sky.HostKeyError, match="pinned"):
        asyncio.run(attempt(wrong))


def test_a_key_the_host_does_not_accept_says_so(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger_key"
    write_key(stranger, asyncssh.generate_private_key("ssh-ed25519"))
    compute = ssh_pool(ssh_hosts, provider=ssh_provider(ssh_hosts, servers=[0], key_file=str(stranger)))
    with pytest.raises(SSHAuthError, match="refused the key") as caught:
        compute.start()
    assert ssh_hosts.servers[0].address in str(caught.value)
    assert "BEGIN" not in str(caught.value)  # no key material in errors


def test_an_unreachable_host_fails_the_pool_naming_it(ssh_hosts: SSHHosts) -> None:
    address = loopback(0, 9)
    port = free_port(address)
    provider = sky.SSH(hosts=[f"{address}:{port}"], key_file=str(ssh_hosts.key_file),
                       known_hosts=str(ssh_hosts.known_hosts))
    compute = ssh_pool(ssh_hosts, provider=provider, ssh_timeout=1)
    with pytest.raises(ConnectionError, match=f"{address}:{port}"):
        compute.start()


class PinnedCloud(Provider):
    """A stand-in for a cloud provider: instances carry the host key their API reported, and the
    SSH side is the same `RemoteNodes` that sky.SSH uses; known_hosts is empty on purpose."""

    name = "pinned-cloud"

    def __init__(
        self, hosts: SSHHosts, empty_known_hosts: str, pin: str | None = None, options: Any = None
    ) -> None:
        super().__init__(options)
        self.hosts, self.pin = hosts, pin
        self.remote = RemoteNodes(
            key_file=str(hosts.key_file), known_hosts=empty_known_hosts, python=sys.executable
        )
        self.held: dict[str, Instance] = {}

    async def prepare(self, spec: Any, pool_id: str) -> Cluster:
        self.remote.options = self.options
        return Cluster(id=pool_id, provider=self.name, spec=spec)

    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        server = self.hosts.servers[0]
        key = self.pin or server.host_key.export_public_key().decode().strip()
        instances = [Instance(id=f"vm-{i}", node=i, public_ip=server.address, private_ip=server.address,
                              ssh_user=server.user, ssh_port=server.port, host_key=key) for i in nodes]
        self.held.update((i.id, i) for i in instances)
        return instances

    async def machines(self, cluster: Cluster) -> list[Instance]:
        return list(self.held.values())

    def python_bin(self, cluster: Cluster) -> str:
        return self.remote.python_bin()

    async def connect(self, cluster: Cluster, instance: Instance, setup: Any) -> Any:
        return await self.remote.start_worker(cluster, instance, setup)

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        for instance in instances:
            await self.remote.clean(cluster, instance)
            self.held.pop(instance.id, None)

    async def teardown(self, cluster: Cluster) -> None:
        await self.remote.close()


@attrs.frozen
class PinnedCloudConfig(ProviderConfig):
    hosts: Any
    known_hosts: str
    pin: str | None = None
    name = "pinned-cloud"

    def create(self, options: Any = None) -> PinnedCloud:
        return PinnedCloud(self.hosts, self.known_hosts, self.pin, options)

    def hourly_price(self, spec: Any) -> float | None:
        return None


@sky.function
def node_home() -> str:
    import os

    return os.environ["HOME"]


def test_a_cloud_style_provider_trusts_the_pinned_key_of_its_instances(
    ssh_hosts: SSHHosts, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    quiet: dict[str, Any] = {"console": False, "logging": False}
    with sky.Compute(provider=PinnedCloudConfig(ssh_hosts, str(empty)), **quiet) as compute:
        assert node_home() >> compute == str(ssh_hosts.servers[0].home)
    wrong = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    compute = sky.Compute(provider=PinnedCloudConfig(ssh_hosts, str(empty), wrong), **quiet)
    with pytest.raises(sky.HostKeyError, match="pinned for this instance"):
        compute.start()


def _connect(server: Any, hosts: SSHHosts, known: Path) -> str:
    async def attempt() -> str:
        conn = await connect(server.address, server.port, server.user, key_file=hosts.key_file,
                             known_hosts=known)
        async with conn:
            return str((await conn.run("echo in", check=True)).stdout).strip()

    return asyncio.run(attempt())


def test_an_entry_without_a_port_does_not_vouch_for_another_port(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    """As in OpenSSH: `host key` is the host's port 22; port 2222 needs a `[host]:2222 key` entry."""
    server = ssh_hosts.servers[0]
    key = server.host_key.export_public_key().decode().strip()
    known = tmp_path / "known_hosts"
    known.write_text(f"{server.address} {key}\n")
    with pytest.raises(sky.HostKeyError, match="not listed") as caught:
        _connect(server, ssh_hosts, known)
    message = str(caught.value)
    assert "without a port" in message and f"[{server.address}]:{server.port}" in message
    assert f"ssh-keyscan -p {server.port} {server.address}" in message
    known.write_text(f"[{server.address}]:{server.port} {key}\n")
    assert _connect(server, ssh_hosts, known) == "in"


def test_a_hashed_known_hosts_file_is_read(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    server = ssh_hosts.servers[1]
    known = tmp_path / "known_hosts"
    known.write_text(server.known_hosts_line + "\n")
    subprocess.run(["ssh-keygen", "-H", "-f", str(known)], check=True, capture_output=True)
    assert server.address not in known.read_text()  # hashed
    assert _connect(server, ssh_hosts, known) == "in"


def test_a_revoked_host_key_is_refused_saying_so(ssh_hosts: SSHHosts, tmp_path: Path) -> None:
    server = ssh_hosts.servers[0]
    known = tmp_path / "known_hosts"
    # Revoked, even though the next line trusts the same key: a revocation wins.
    known.write_text(f"@revoked {server.known_hosts_line}\n{server.known_hosts_line}\n")
    with pytest.raises(sky.HostKeyError, match="@revoked") as caught:
        _connect(server, ssh_hosts, known)
    message = str(caught.value)
    assert server.host_key.get_fingerprint() in message and str(known) in message
    assert "does not match" not in message and "not listed" not in message
    assert f"delete it from {known}" in message
