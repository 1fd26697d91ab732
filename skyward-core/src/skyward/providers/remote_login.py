"""Logging in to an SSH node, and what a start must know of the login: its home folder and facts.

Every remote path of a pool is absolute, under the login's home (`~/.skyward/pools/...`), and the
first requests of a start (the bootstrap and the worker's start sent with it) carry such paths. A
probe asks for the home (and the CPUs and memory a task may size its work by) on an exec channel
of its own: two round trips before anything else can go. So the client keeps what it learnt, per
login user and host key (`HomeRecords`, in `$SKYWARD_HOME/hosts/homes.json`, mode 0600; no
secret: a path and two numbers), and a start on a host it knows sends its first requests at
once, each checking on the node that `$HOME` is still the recorded one (`home_check`). A start
whose check fails (the account's home moved) probes, records the new home and starts again.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from skyward.providers.base import Instance
    from skyward.transport.ssh_connect import Connection

#: `Options.ssh_timeout` / `ssh_retry_interval` when left at None.
DEFAULT_SSH_TIMEOUT = 60.0
DEFAULT_RETRY_INTERVAL = 1.0
#: A login that is not a reconnect (the first one, a cleanup) is not retried for longer than this.
FIRST_LOGIN_TIMEOUT = 20.0
#: Where a host keeps the environments images built (`bootstrap.environments`), under its home.
ENVIRONMENTS = ".skyward/envs"
#: How long a node's exit scripts may run when it is cleaned (uploading a read-write volume's copy).
EXIT_SCRIPTS_TIMEOUT = 600.0
#: How many hosts the client's record keeps (the most recently learnt).
RECORDED_HOSTS = 512

#: The probe: the home folder, CPUs and memory (kB), one a line.
PROBE = (
    'printf "%s\\n" "$HOME"; getconf _NPROCESSORS_ONLN 2>/dev/null || echo 0; '
    "awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0"
)


@attrs.frozen
class Login:
    """How to reach one machine: address, port, user and, for clouds, the pinned host key."""

    host: str
    port: int = 22
    user: str = ""
    host_key: str = ""

    @classmethod
    def of(cls, instance: Instance) -> Login:
        return cls(instance.public_ip, instance.ssh_port, instance.ssh_user, instance.host_key)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{self.port}" if self.user else f"{host}:{self.port}"


@attrs.frozen
class Home:
    """What a start knows of a login: its home folder, CPUs and memory (GB)."""

    folder: str
    cpus: int = 0
    memory_gb: float = 0.0


def parse_probe(output: str, login: Any) -> Home:
    """The probe's answer (`PROBE`), or ConnectionError when it names no home folder."""
    lines = output.splitlines()
    if not lines or not lines[0].startswith("/"):
        raise ConnectionError(f"SSH host {login} did not report a home folder ($HOME)")
    cpus, memory = 0, 0.0
    with contextlib.suppress(ValueError, IndexError):
        cpus, memory = int(lines[1]), int(lines[2]) / 1024 / 1024
    return Home(lines[0], cpus, memory)


def home_check(folder: str) -> str:
    """A shell command that ends the request (status 1, saying why) unless the login's `$HOME` is
    `folder`, the one recorded: a start sent on a record must not work in a stale home."""
    q = shlex.quote(folder)
    return (
        f'{{ [ "${{HOME:-}}" = {q} ] || {{ echo "skyward: this login\'s home is $HOME, not" {q} '
        '"as this client recorded it: probing it again" >&2; exit 1; }; }'
    )


def login_key(conn: Connection) -> str | None:
    """The record's key for `conn`'s login: its user and the server's host key (what the login
    verified), so that the same machine reached through another address or port is known too."""
    key = conn.get_server_host_key()
    user = conn.get_extra_info("username")
    if key is None or not user:
        return None
    return f"{user} {key.get_fingerprint('sha256')}"


def records_file() -> Path:
    """Where the client keeps the homes it learnt: `$SKYWARD_HOME/hosts/homes.json`."""
    from skyward.home import skyward_home

    return skyward_home() / "hosts" / "homes.json"


class HomeRecords:
    """The client's record of the homes it learnt (see the module's docstring)."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else records_file()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str | None) -> Home | None:
        entry = self._read().get(key) if key else None
        if not isinstance(entry, dict) or not str(entry.get("home", "")).startswith("/"):
            return None
        with contextlib.suppress(TypeError, ValueError):
            return Home(str(entry["home"]), int(entry.get("cpus", 0)), float(entry.get("memory_gb", 0.0)))
        return None

    def put(self, key: str | None, home: Home) -> None:
        """Record `home` for `key`; a record that cannot be written costs the next start a probe."""
        if not key:
            return
        data = self._read()
        data.pop(key, None)
        data[key] = {"home": home.folder, "cpus": home.cpus, "memory_gb": home.memory_gb}
        data = dict(list(data.items())[-RECORDED_HOSTS:])
        path = self.path
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".homes-")
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(data, f)
                os.replace(temporary, path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
