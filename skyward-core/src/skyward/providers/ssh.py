"""`sky.SSH(hosts=[...])`: machines you already have, reached over SSH.

Node `i` is `hosts[i]`. Each node gets its own folder, `~/.skyward/pools/<pool>/node-<i>`, where
the bootstrap builds the venv; the worker runs there over an SSH exec channel, with its stdin and
stdout as the protocol stream (no port is opened on the host). When the pool exits, every worker
it started is killed (its whole process group) and the node folder is removed: nothing else on the
hosts is touched.

A dropped connection (sshd restarted, network blip) loses the node: its tasks are requeued and the
pool reconnects to the same host, retrying with exponential backoff for `Options.ssh_timeout`
seconds (60 by default), then starts a fresh worker in the same venv. The old worker exits by
itself (its stdin closed with the connection) and is killed by pid file if it lingers.
"""

from __future__ import annotations

import asyncio
import getpass
import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from skyward.errors import ConfigurationError, HostKeyError
from skyward.options import Options
from skyward.providers.base import Cluster, Instance, NodeSetup, Provider, ProviderConfig

if TYPE_CHECKING:
    from skyward.providers.credentials import CredentialStatus
    from skyward.spec import Nodes, Spec
    from skyward.transport.ssh import SSHChannel

#: Rendezvous ports (torch MASTER_PORT, the JAX coordinator) are drawn from this range on the head.
HEAD_PORTS = (29500, 30500)


@attrs.frozen
class SSHHost:
    """One `user@host:port` target."""

    host: str
    port: int = 22
    user: str = ""

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{self.port}"


def parse_host(text: str) -> SSHHost:
    """`"host"`, `"user@host"`, `"user@host:2222"`, `"[::1]:2222"`; the user defaults to yours."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigurationError(f'SSH(hosts=[{text!r}]): expected "host", "user@host" or "user@host:port"')
    value = text.strip()
    user, at, rest = value.rpartition("@")
    if not at:
        user, rest = "", value
    port = 22
    if rest.startswith("["):
        host, bracket, tail = rest[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise ConfigurationError(
                f"SSH(hosts=[{text!r}]): an IPv6 address is written [addr] or [addr]:port"
            )
        port_text = tail[1:]
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
    else:
        host, port_text = rest, ""  # a bare IPv6 address, or a plain name
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigurationError(f"SSH(hosts=[{text!r}]): the port must be a number from 1 to 65535")
        port = int(port_text)
    if not host:
        raise ConfigurationError(f"SSH(hosts=[{text!r}]): the host name is missing")
    return SSHHost(host=host, port=port, user=user or getpass.getuser())


def _hosts(value: str | Iterable[str]) -> tuple[str, ...]:
    hosts = (value,) if isinstance(value, str) else tuple(value)
    if not hosts:
        raise ConfigurationError('SSH(hosts=[]): name at least one machine, e.g. SSH(hosts=["gpu1", "gpu2"])')
    for host in hosts:
        parse_host(host)
    return hosts


def _path(value: object) -> str | None:
    return None if value is None else str(value)


@attrs.frozen
class SSH(ProviderConfig):
    """Run a pool on machines you already have: one node per host, in `hosts` order.

    `key_file` is the private key to log in with (default: your ssh-agent, then ~/.ssh/id_*);
    `known_hosts` the file that holds the hosts' keys (default ~/.ssh/known_hosts: a host missing
    from it is refused, never trusted on first use); `python` an interpreter already on the hosts
    to build the venv from (default: the bootstrap installs the image's Python with uv).
    """

    hosts: tuple[str, ...] = attrs.field(converter=_hosts)
    key_file: str | None = attrs.field(default=None, converter=_path)
    known_hosts: str | None = attrs.field(default=None, converter=_path)
    python: str | None = None

    @property
    def name(self) -> str:
        return "ssh"

    @property
    def targets(self) -> tuple[SSHHost, ...]:
        return tuple(parse_host(h) for h in self.hosts)

    @property
    def default_nodes(self) -> int:
        """`nodes=` left out means one node per host."""
        return len(self.hosts)

    def check_nodes(self, nodes: Nodes) -> None:
        if nodes.ceiling > len(self.hosts):
            raise ConfigurationError(
                f"nodes={nodes.ceiling} but SSH has {len(self.hosts)} host(s) ({', '.join(self.hosts)}); "
                "each node is one host: list more hosts or ask for fewer nodes"
            )

    def create(self, options: Options | None = None) -> SSHProvider:
        return SSHProvider(self, options)

    def hourly_price(self, spec: Spec) -> float:
        """Machines you already have cost nothing extra here."""
        return 0.0

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: the keys are the user's own SSH setup (agent, ~/.ssh), per host."""
        from skyward.providers.credentials import CredentialStatus

        return CredentialStatus(found=True, where="your SSH keys (agent or ~/.ssh)")


def head_port(pool_id: str) -> int:
    """A rendezvous port for the pool, stable for its id, spread so concurrent pools rarely meet."""
    low, high = HEAD_PORTS
    digest = hashlib.blake2b(pool_id.encode(), digest_size=4).digest()
    return low + int.from_bytes(digest, "big") % (high - low)


class SSHProvider(Provider):
    """Your hosts as nodes: node `i` is `hosts[i]`; the SSH work itself is `RemoteNodes`'."""

    name = "ssh"
    #: A guardian on each host ends the pool's processes and secrets when its client is gone; no
    #: end command: the hosts are yours, never powered off.
    guards_nodes = True
    #: Hosts keep the environment an image built between pools (never a process, never a secret).
    keeps_environments = True

    def __init__(self, config: SSH, options: Options | None = None) -> None:
        from skyward.providers.remote import RemoteNodes  # here: `sky.SSH` alone loads no asyncssh

        super().__init__(options)
        self.config = config
        self.targets = config.targets
        self.nodes = RemoteNodes(
            key_file=config.key_file, known_hosts=config.known_hosts, python=config.python,
            options=self.options,
        )
        #: The instances provisioned and not terminated yet, by id: `machines`.
        self._held: dict[str, Instance] = {}

    async def prepare(self, spec: Spec, pool_id: str) -> Cluster:
        """Log in to every host once (host keys checked, home folders learnt); fail naming the host."""
        from skyward.providers.remote import FIRST_LOGIN_TIMEOUT, Login

        timeout = min(self.nodes.ssh_timeout, FIRST_LOGIN_TIMEOUT)
        logins = [Login(t.host, t.port, t.user) for t in self.targets]
        results = await asyncio.gather(
            *(self.nodes.open(i, login, timeout) for i, login in enumerate(logins)), return_exceptions=True
        )
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            await self.nodes.close()
            for exc in failures:
                if isinstance(exc, HostKeyError):
                    raise exc
            if len(failures) == 1:
                raise failures[0]
            raise ConnectionError(
                f"{len(failures)} of {len(self.targets)} SSH hosts could not be reached:\n"
                + "\n".join(f"  - {exc}" for exc in failures)
            )
        return Cluster(id=pool_id, provider=self.name, spec=spec, head_port=head_port(pool_id))

    async def provision(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        instances = self.planned_instances(cluster, nodes)
        self._held.update((i.id, i) for i in instances)
        return instances

    async def machines(self, cluster: Cluster) -> list[Instance]:
        """The hosts this pool holds (a node folder and workers on each) and has not let go yet."""
        return list(self._held.values())

    def planned_instances(self, cluster: Cluster, nodes: list[int]) -> list[Instance]:
        """The instances of these nodes: your hosts, in order. Nothing is created, so `sky.plan`
        uses it too (CPUs and memory are known once `prepare` has logged in)."""
        instances = []
        for i in nodes:
            if i >= len(self.targets):
                raise ConfigurationError(
                    f"node {i} has no host: SSH has {len(self.targets)} host(s); "
                    "list more hosts to grow the pool"
                )
            target = self.targets[i]
            vcpus, memory = self.nodes.facts(i)
            instances.append(Instance(
                id=f"{cluster.id}-ssh-{i}", node=i, public_ip=target.host, private_ip=target.host,
                ssh_user=target.user, ssh_port=target.port, instance_type="ssh", vcpus=vcpus,
                memory_gb=round(memory, 1),
            ))
        return instances

    def bootstrap_args(self) -> dict[str, Any]:
        """How the bootstrap builds the venv (`SSH(python=...)`), for the pool and for `sky.plan`."""
        return self.nodes.bootstrap_args()

    def python_bin(self, cluster: Cluster) -> str:
        """The venv's interpreter, relative to the node folder every worker starts in."""
        return self.nodes.python_bin()

    def venv_dir(self, cluster: Cluster) -> str:
        return self.nodes.venv_dir()

    async def connect(self, cluster: Cluster, instance: Instance, setup: NodeSetup) -> SSHChannel:
        return await self.nodes.start_worker(cluster, instance, setup)

    async def terminate(self, cluster: Cluster, instances: list[Instance]) -> None:
        """Kill every worker this pool started on these hosts and remove their node folders."""
        await asyncio.gather(*(self.nodes.clean(cluster, i) for i in instances), return_exceptions=True)
        for instance in instances:
            self._held.pop(instance.id, None)

    async def teardown(self, cluster: Cluster) -> None:
        await self.nodes.close()
