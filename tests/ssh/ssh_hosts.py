"""Real OpenSSH servers on loopback for the SSH tests: each one a separate "host".

Each server listens on its own loopback address (127.0.0.2, 127.0.0.3, ...: all of 127/8 is
local on Linux; each pytest-xdist worker takes a /16 of its own, see `loopback`) and free port,
with its own generated host key, its own home folder (`SetEnv HOME=...`, so each host has its own
`~`), key-only login for this user, and its config, pid file and log in a temporary folder. A
known_hosts file lists every server's key.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncssh
import attrs

from skyward._environment_mark import READY
from skyward.providers.remote_login import ENVIRONMENTS as NODE_ENVIRONMENTS


def _worker_index() -> int:
    """1 + this pytest-xdist worker's number (gw3 -> 4); 0 outside xdist, so a run outside xdist
    on the same machine keeps clear of every worker's addresses."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) + 1 if name.startswith("gw") else 0


#: The second octet of every loopback address this process's hosts and fake machines take: each
#: xdist worker has a /16 of 127/8 to itself, so two workers never race for one address and port.
WORKER_OCTET = _worker_index()


def loopback(block: int, host: int) -> str:
    """Loopback address `host` of `block` (127.W.block.host), inside this worker's own /16."""
    if not (0 <= block <= 255 and 1 <= host <= 254):
        raise ValueError(f"loopback address 127.{WORKER_OCTET}.{block}.{host} is out of range")
    return f"127.{WORKER_OCTET}.{block}.{host}"


def find_sshd() -> str | None:
    return shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd") if os.access(p, os.X_OK)), None
    )


def free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


def write_key(path: Path, key: asyncssh.SSHKey) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.export_private_key())
    path.with_suffix(".pub").write_bytes(key.export_public_key())


@attrs.define
class SSHServer:
    address: str
    port: int
    user: str
    home: Path
    folder: Path
    host_key: asyncssh.SSHKey
    process: subprocess.Popen[bytes] | None = None
    #: A cloud machine (`start_machine`): stopping it ends every process its logins started, as
    #: deleting the machine does (its node guardian included).
    machine: bool = False
    #: More of the logins' environment (a machine's own PATH, say), over this machine's settings.
    env: dict[str, str] = attrs.field(factory=dict)

    @property
    def target(self) -> str:
        return f"{self.user}@{self.address}:{self.port}"

    @property
    def known_hosts_line(self) -> str:
        return f"[{self.address}]:{self.port} {self.host_key.export_public_key().decode().strip()}"

    def start(self, sshd: str, authorized_keys: Path, env: dict[str, str]) -> None:
        config = self.folder / "sshd_config"
        setenv = " ".join(f'"{name}={value}"' for name, value in {**env, "HOME": str(self.home)}.items())
        config.write_text(
            "\n".join([
                f"Port {self.port}",
                f"ListenAddress {self.address}",
                f"HostKey {self.folder / 'host_key'}",
                f"PidFile {self.folder / 'sshd.pid'}",
                # and the host's own login file, where a pool's nodes let each other in (client/relay.py)
                f"AuthorizedKeysFile {authorized_keys} {self.home}/.ssh/authorized_keys",
                f"AllowUsers {self.user}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                "StrictModes no",
                f"SetEnv {setenv}",
                "Subsystem sftp internal-sftp",
                "MaxStartups 100",
                "MaxSessions 100",
                "LogLevel ERROR",
                "",
            ])
        )
        log = open(self.folder / "sshd.log", "ab")  # noqa: SIM115 - owned by the process
        self.process = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd on {self.address}:{self.port} exited: {self.log()}")
            with contextlib.suppress(OSError):
                socket.create_connection((self.address, self.port), timeout=0.5).close()
                return
            time.sleep(0.05)
        raise RuntimeError(f"sshd on {self.address}:{self.port} did not start: {self.log()}")

    def boot(self) -> None:
        """Start a machine's sshd (`start_machine`), with the keys in its folder."""
        self.start(_sshd(), self.folder / "authorized_keys", {**_host_env(), **self.env})

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "sshd.log").read_text()
        return ""

    def session_pids(self) -> list[int]:
        """The per-connection sshd processes (children of the listener)."""
        if self.process is None:
            return []
        return [pid for pid in all_pids() if parent_pid(pid) == self.process.pid]

    def stop(self) -> None:
        if self.machine:  # its sshd may never have started, but what it booted did
            end_every_process_of(self.home)
        if self.process is None:
            if self.machine:
                shelve_environments(self.home)
            return
        sessions = self.session_pids()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None
        if self.machine:  # and whatever a login started while the sshd was going
            end_every_process_of(self.home)
            shelve_environments(self.home)


@attrs.define
class SSHHosts:
    servers: list[SSHServer]
    key_file: Path
    known_hosts: Path
    folder: Path

    @property
    def targets(self) -> list[str]:
        return [s.target for s in self.servers]

    def stop(self) -> None:
        """Stop every sshd, then end whatever a login left on these hosts: a pool that lost a host
        leaves its guardian there waiting out `Spec.ttl`, as on a real machine, which a test's
        hosts must not outlive."""
        for server in self.servers:
            server.stop()
        for server in self.servers:
            end_every_process_of(server.home)


#: Network settings of this machine that its loopback "hosts" share (a TLS-intercepting proxy's CA,
#: proxies, package indexes): a real host would have its own.
FORWARDED_ENV = (
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL",
    "UV_NATIVE_TLS", "UV_SYSTEM_CERTS", "PIP_INDEX_URL", "PIP_CERT",
)


def find_uv() -> str | None:
    """uv next to this interpreter or on PATH (requirements-test.txt installs it)."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else shutil.which("uv")


def uv_cache_dir() -> str:
    """The client's uv cache, shared by every host: a package downloads once, not once per node."""
    found = os.environ.get("UV_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    if os.environ.get("UV_CACHE_DIR"):
        return os.environ["UV_CACHE_DIR"]
    base = Path(found) if found else Path.home() / ".cache"
    return str(base / "uv")


def _sshd() -> str:
    sshd = find_sshd()
    if sshd is None:
        raise RuntimeError(
            "sshd is not installed: the SSH tests run real OpenSSH servers. Install it with "
            "`apt-get install -y openssh-server` (scripts/test.sh does this)."
        )
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    return sshd


#: A new VM's login PATH: the system's folders, where this machine has no uv (`fresh_env` checks).
FRESH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _host_env(*, fresh: bool = False) -> dict[str, str]:
    env = {name: os.environ[name] for name in FORWARDED_ENV if os.environ.get(name)}
    if fresh:  # its own caches, in its own home: nothing downloaded before
        env["PATH"] = FRESH_PATH
        env["PIP_NO_CACHE_DIR"] = "1"
        return env
    env["UV_CACHE_DIR"] = uv_cache_dir()
    return env


def _make_home(host_folder: Path, *, fresh: bool = False) -> Path:
    home = host_folder / "home"
    home.mkdir(parents=True)
    uv = None if fresh else find_uv()
    if uv is not None:  # the host has uv installed, as `pip install --user uv` would leave it
        (home / ".local" / "bin").mkdir(parents=True)
        os.symlink(uv, home / ".local" / "bin" / "uv")
    return home


def _check_fresh_path() -> None:
    found = [d for d in FRESH_PATH.split(":") if os.access(os.path.join(d, "uv"), os.X_OK)]
    if found:
        raise RuntimeError(
            f"fresh hosts need a PATH without uv, and this machine has uv in {found}: the fresh-host "
            "tests would not test a host without uv; remove it from there (pip installs it beside python)"
        )


def start_hosts(
    folder: Path, count: int, *, fresh: bool = False, env: dict[str, str] | None = None
) -> SSHHosts:
    """`count` hosts under `folder`. `fresh`: as a new cloud VM, no uv on the login's PATH nor in
    `~/.local/bin`, no pip or uv cache shared with this machine. `env` adds to the logins' environment."""
    if fresh:
        _check_fresh_path()
    sshd = _sshd()
    user = getpass.getuser()
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_file = folder / "client_key"
    write_key(key_file, client_key)
    authorized = folder / "authorized_keys"
    authorized.write_bytes(client_key.export_public_key())
    env = {**_host_env(fresh=fresh), **(env or {})}
    servers = []
    for i in range(count):
        address = loopback(0, i + 2)
        host_folder = folder / f"host{i}"
        home = _make_home(host_folder, fresh=fresh)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        write_key(host_folder / "host_key", host_key)
        servers.append(SSHServer(address, free_port(address), user, home, host_folder, host_key))
    hosts = SSHHosts(servers, key_file, folder / "known_hosts", folder)
    hosts.known_hosts.write_text("".join(s.known_hosts_line + "\n" for s in servers))
    try:
        for server in servers:
            server.start(sshd, authorized, env)
    except BaseException:
        hosts.stop()
        raise
    return hosts


@contextlib.contextmanager
def hosts_running(
    folder: Path, count: int, *, leak_check: bool = False, fresh: bool = False,
    env: dict[str, str] | None = None,
) -> Iterator[SSHHosts]:
    """`start_hosts`, for a fixture: the hosts are stopped when it ends, and with `leak_check` it
    fails first if a pool left workers running on them."""
    hosts = start_hosts(folder, count, fresh=fresh, env=env)
    try:
        yield hosts
        if leak_check:
            left = {str(s.home): workers_of(s.home) for s in hosts.servers}
            assert not any(left.values()), f"workers left running on the SSH hosts: {left}"
    finally:
        hosts.stop()


def start_machine(
    folder: Path, address: str, port: int, host_key: str, login_key: str, *, start: bool = True,
    env: dict[str, str] | None = None,
) -> SSHServer:
    """A cloud machine's sshd, as a cloud's fake API starts one for each instance it creates.

    It answers with `host_key` (the private key the provider handed the machine, as cloud-init
    or a container's start command would install it) and lets in `login_key` (the pool's key);
    it runs as this user, in its own home folder under `folder`. `start=False` prepares it
    without starting it: `server.boot()` starts it later, as a machine that boots slowly. `env`
    adds to its logins' environment (SetEnv: a PATH given here replaces the default one).
    """
    folder.mkdir(parents=True, exist_ok=True)
    home = _make_home(folder)
    stock_environments(home)
    key = asyncssh.import_private_key(host_key)
    write_key(folder / "host_key", key)
    authorized = folder / "authorized_keys"
    authorized.write_text(login_key.strip() + "\n")
    server = SSHServer(address, port, getpass.getuser(), home, folder, key, machine=True, env=dict(env or {}))
    if start:
        server.boot()
    return server


# -- environments the cloud machines share ---------------------------------------------------------

#: The folder where this test process keeps the environments its cloud machines built
#: (tests/conftest.py sets it per xdist worker, in the run's tmp folder); unset, or in a test marked
#: `cold_machines`, every machine boots as a new VM does: with none.
SHELF_VARIABLE = "SKYWARD_TEST_MACHINE_ENVIRONMENTS"
#: Where a node keeps its environments, under its home.
ENVIRONMENTS = Path(NODE_ENVIRONMENTS)


def _shelf() -> Path | None:
    found = os.environ.get(SHELF_VARIABLE)
    return Path(found) if found else None


def _link_copy(source: Path, target: Path) -> None:
    """`source`'s tree at `target`, its files hard links to `source`'s: a venv in tens of
    milliseconds. Safe to share: what installs or compiles into a venv replaces files, never writes
    into one in place, and a worker that finds its environment broken unlinks the ready mark."""
    subprocess.run(["cp", "-al", str(source), str(target)], check=True)


def stock_environments(home: Path) -> None:
    """Give a new cloud machine every complete environment an earlier machine of this test process
    built, as a machine that ran the same image before has (`skyward.bootstrap.environments`).

    Each cloud's pool tests then spend their CPU on what they test (its API, its start, its
    guardian) rather than on building the same venv with uv once per machine, hundreds of times per
    run. The build itself is tested on every kind of host still: each cloud's contract tests are
    marked `cold_machines`, and tests/ssh and tests/bootstrap start hosts without any."""
    shelf = _shelf()
    if shelf is None or not shelf.is_dir():
        return
    for environment in shelf.iterdir():
        if environment.name.startswith(".") or not (environment / READY).is_file():
            continue
        target = home / ENVIRONMENTS / environment.name
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _link_copy(environment, target)


def shelve_environments(home: Path) -> None:
    """Keep the complete environments of a machine that stopped (its processes ended) for the next
    machines (`stock_environments`); one the shelf holds already, or one without its ready mark (cut
    off, or taken away by a worker that could not import), stays out."""
    shelf = _shelf()
    environments = home / ENVIRONMENTS
    if shelf is None or not environments.is_dir():
        return
    shelf.mkdir(parents=True, exist_ok=True)
    for environment in environments.iterdir():
        if not (environment / READY).is_file() or (shelf / environment.name).exists():
            continue
        # copied aside, then renamed into place: a machine stopped from a fake's thread at the same
        # time, or a machine being stocked, never sees half an environment
        staging = shelf / f".{environment.name}.{os.getpid()}.{time.monotonic_ns()}"
        try:
            _link_copy(environment, staging)
            os.rename(staging, shelf / environment.name)
        except (OSError, subprocess.CalledProcessError):  # the other one got there first
            shutil.rmtree(staging, ignore_errors=True)


# -- /proc helpers -----------------------------------------------------------------------------------


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def parent_pid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def environ(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def processes_of(home: Path) -> list[int]:
    """Live processes started by a login to the host whose home is `home` (sshd sets HOME)."""
    mine = os.getpid()
    return [
        pid for pid in all_pids()
        if pid != mine and pid_alive(pid) and environ(pid).get("HOME") == str(home)
    ]


def end_every_process_of(home: Path, within: float = 10.0) -> None:
    """SIGKILL every process of the host whose home is `home`, as a machine that powers off ends
    them all: again until none is left, since one may have forked (a keeper starting its worker)
    between the listing and its kill."""
    deadline = time.monotonic() + within
    while (left := processes_of(home)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def workers_of(home: Path) -> list[int]:
    return [pid for pid in processes_of(home) if "skyward.worker" in cmdline(pid)]


# -- pools on these hosts ------------------------------------------------------------------------------


def ssh_provider(hosts: SSHHosts, *, servers: list[int] | None = None, **kwargs: Any) -> Any:
    """`sky.SSH` over `hosts` (or the `servers` named by index), building venvs from this Python."""
    import skyward as sky

    chosen = [hosts.servers[i] for i in servers] if servers is not None else hosts.servers
    kwargs.setdefault("key_file", str(hosts.key_file))
    kwargs.setdefault("known_hosts", str(hosts.known_hosts))
    kwargs.setdefault("python", sys.executable)
    return sky.SSH(hosts=[s.target for s in chosen], **kwargs)


def ssh_pool(
    hosts: SSHHosts, *, servers: list[int] | None = None, provider: Any = None, **kwargs: Any
) -> Any:
    """A pool (not started) on these hosts, quiet."""
    import skyward as sky

    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=provider or ssh_provider(hosts, servers=servers), **kwargs)


def wait_until(predicate: Any, timeout: float = 10.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
