"""Opening SSH connections (asyncssh), with the host key always verified, and the pools' keys.

Host keys are checked against a known_hosts file (the user's by default, read as OpenSSH reads it:
a host on a port other than 22 only matches `[host]:port` entries) or a key pinned by a cloud
provider (`Instance.host_key`). An unknown, changed or `@revoked` key is a `HostKeyError` naming
the host and the fingerprint; nothing is ever accepted silently. Private keys and passphrases
never reach a log line or an event. `pool_key` makes the per-pool login key clouds inject.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh

from skyward.errors import HostKeyError
from skyward.fastpaths.asyncssh_send import without_ignore_padding
from skyward.retry import backoff, retry

#: Seconds between SSH keepalives, and how many may go unanswered before the connection is lost.
KEEPALIVE_INTERVAL = 15
KEEPALIVE_COUNT = 4

Connection = asyncssh.SSHClientConnection

# asyncssh logs every connection and channel at INFO; unless the application set a level for it,
# keep it to warnings so an application's INFO logging is not flooded by the transport.
if logging.getLogger("asyncssh").level == logging.NOTSET:
    logging.getLogger("asyncssh").setLevel(logging.WARNING)


class SSHAuthError(ConnectionError):
    """The host refused every key offered (or the key file is unusable): retrying will not help."""


# -- connecting ---------------------------------------------------------------------------------------


def default_known_hosts() -> Path:
    return Path("~/.ssh/known_hosts").expanduser()


def ssh_target(host: str, port: int, user: str | None) -> str:
    """`user@host[:port]` for messages (the port only when it is not 22)."""
    where = f"{host}:{port}" if port != 22 else host
    return f"{user}@{where}" if user else where


def openssh_match(
    known: Any, host: str, addr: str, port: int | None
) -> tuple[list[Any], list[Any], list[Any]]:
    """The (trusted, CA, revoked) keys `known` lists for this host, read the way OpenSSH reads them.

    On a port other than 22 only `[host]:port` entries count: OpenSSH never falls back to a
    port-less `host` entry there, while asyncssh's own lookup does, so a key recorded for another
    service on the same machine (port 22) would be trusted for this one. The name and the address
    are both looked up, as asyncssh does.
    """
    if not port or port == 22:
        found = known.match(host, addr, None)
        return list(found[0]), list(found[1]), list(found[2])
    trusted: list[Any] = []
    cas: list[Any] = []
    revoked: list[Any] = []
    for name in dict.fromkeys(n for n in (host, addr) if n):
        # With the port in the name and none passed, asyncssh looks up exactly "[name]:port".
        found = known.match(f"[{name}]:{port}", "", None)
        trusted += found[0]
        cas += found[1]
        revoked += found[2]
    return trusted, cas, revoked


def _trusted_keys(
    host: str, port: int, known_hosts: str | os.PathLike[str] | None, host_key: str | None
) -> tuple[Any, str]:
    """What asyncssh should trust for this host, and a phrase naming where that came from."""
    if host_key:
        try:
            key = asyncssh.import_public_key(host_key)
        except (asyncssh.KeyImportError, ValueError) as exc:
            raise HostKeyError(
                f"The host key pinned for {host} could not be read ({exc}); expected an OpenSSH public key "
                "line such as 'ssh-ed25519 AAAA...'."
            ) from None
        return ([key], [], []), "the host key pinned for this instance"
    path = Path(known_hosts).expanduser() if known_hosts else default_known_hosts()
    if path.is_file():
        return functools.partial(openssh_match, asyncssh.read_known_hosts(str(path))), str(path)
    return ([], [], []), f"{path} (which does not exist)"


def _listed(trusted: Any, host: str, port: int) -> tuple[list[Any], list[Any], list[Any]]:
    """The (trusted, CA, revoked) keys behind `trusted` for this host, to word an error with."""
    if callable(trusted):
        return trusted(host, host, port if port != 22 else None)
    return trusted


def _host_key_error(host: str, port: int, user: str | None, seen: list[Any], trusted: Any, source: str,
                    known_hosts: str | os.PathLike[str] | None, pinned: bool = False,
                    reason: str = "") -> HostKeyError:
    target = ssh_target(host, port, user)
    if seen:
        key = seen[-1]
        shown = f"the {key.get_algorithm()} host key {key.get_fingerprint()}"
    else:
        shown = "a host key"
    if pinned:
        expected = trusted[0][0]
        return HostKeyError(
            f"SSH host {target} presented {shown}, but the key pinned for this instance is "
            f"{expected.get_algorithm()} {expected.get_fingerprint()}; the connection was refused. The "
            "instance was replaced, or someone is intercepting the connection: terminate it and start again."
        )
    try:
        listed, _, revoked = _listed(trusted, host, port)
    except Exception:  # noqa: BLE001 - only used to word the message
        listed, revoked = [], []
    pattern = f"[{host}]:{port}" if port != 22 else host
    file = str(Path(known_hosts).expanduser()) if known_hosts else str(default_known_hosts())
    keyscan = f"ssh-keyscan -p {port} {host}" if port != 22 else f"ssh-keyscan {host}"
    if not seen and (revoked or "revoked" in reason):
        # asyncssh refuses a revoked key before asking us, so the key shown is the one revoked here.
        which = ", ".join(f"{k.get_algorithm()} {k.get_fingerprint()}" for k in revoked)
        return HostKeyError(
            f"SSH host {target} presented a host key that {source} marks @revoked"
            f"{f' ({which})' if which else ''}; the connection was refused. A revoked key is never "
            "trusted, whatever other lines of the file say. If the key was revoked because it leaked, give "
            f"the host a new host key, check its fingerprint out of band and add it ({keyscan} >> {file}). "
            f"If the @revoked line is a mistake, delete it from {file}."
        )
    if listed:
        what = f"which does not match the key recorded for it in {source}"
        todo = (
            "If the host was reinstalled and you trust the new key, remove the old entry "
            f"(ssh-keygen -R '{pattern}' -f {file}) and add the new one ({keyscan} >> {file}) after checking "
            "its fingerprint out of band. Otherwise someone may be intercepting the connection."
        )
    else:
        what = f"which is not listed in {source}"
        todo = (
            "Check the fingerprint out of band (on the host: ssh-keygen -lf "
            f"/etc/ssh/ssh_host_ed25519_key.pub), then trust it: {keyscan} >> {file}, "
            "or pass SSH(known_hosts=...) naming a file that has it."
        )
        if port != 22 and callable(trusted) and _listed(trusted, host, 22)[0]:
            todo += (
                f" ({file} lists {host} without a port, which is its port 22; as in OpenSSH, a host on "
                f"port {port} is only matched by entries written [{host}]:{port}.)"
            )
    return HostKeyError(f"SSH host {target} presented {shown}, {what}; the connection was refused. {todo}")


async def connect(
    host: str,
    port: int = 22,
    user: str | None = None,
    *,
    key_file: str | os.PathLike[str] | None = None,
    known_hosts: str | os.PathLike[str] | None = None,
    host_key: str | None = None,
    agent: bool = True,
    timeout: float = 30.0,
) -> Connection:
    """Open an SSH connection with the host key verified; raise `HostKeyError` or `ConnectionError`.

    Keys: `key_file` when given (only that key, sent signed in the first user-auth request:
    `fastpaths.asyncssh_auth`); otherwise the ssh-agent (`SSH_AUTH_SOCK`, unless `agent=False`)
    and the usual `~/.ssh/id_*` files. `~/.ssh/config` is not read: what is passed here is what is
    used.
    """
    trusted, source = _trusted_keys(host, port, known_hosts, host_key)
    seen: list[Any] = []
    try:
        conn = await asyncio.wait_for(
            asyncssh.connect(
                host, port, username=user or None, known_hosts=trusted, config=None,
                client_factory=_client_factory(seen, sign_first=key_file is not None),
                connect_timeout=timeout, keepalive_interval=KEEPALIVE_INTERVAL,
                keepalive_count_max=KEEPALIVE_COUNT, **_key_options(key_file, agent),
            ),
            timeout,
        )
        without_ignore_padding(conn)
        return conn
    except asyncssh.HostKeyNotVerifiable as exc:
        raise _host_key_error(
            host, port, user, seen, trusted, source, known_hosts, bool(host_key), str(exc)
        ) from None
    except asyncssh.PermissionDenied:
        which = f"the key {key_file}" if key_file is not None else "your ssh-agent's keys and ~/.ssh/id_*"
        raise SSHAuthError(
            f"SSH host {ssh_target(host, port, user)} refused {which}: add the public key to that "
            "user's ~/.ssh/authorized_keys, or pass SSH(key_file=...) naming a key it accepts."
        ) from None
    except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
        raise SSHAuthError(
            f"The SSH key {key_file} could not be used ({type(exc).__name__}); an encrypted key must be "
            "loaded into ssh-agent (ssh-add) instead of being passed as key_file."
        ) from None
    except (TimeoutError, OSError, asyncssh.Error) as exc:
        reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else f"{type(exc).__name__}: {exc}"
        target = ssh_target(host, port, user)
        raise ConnectionError(f"Could not connect to SSH host {target} ({reason})") from None


def _key_options(key_file: str | os.PathLike[str] | None, agent: bool) -> dict[str, Any]:
    """asyncssh's options for the keys `connect` offers (its docstring), ciphers and compression."""
    options: dict[str, Any] = {"encryption_algs": ciphers(), "compression_algs": None}
    if key_file is not None:
        path = Path(key_file).expanduser()
        if not path.is_file():
            raise SSHAuthError(
                f"The SSH key file {path} does not exist; pass SSH(key_file=...) naming a private key"
            )
        options["client_keys"] = [str(path)]
        options["agent_path"] = None
    elif not agent or not os.environ.get("SSH_AUTH_SOCK"):
        options["agent_path"] = None
    return options


def _client_factory(seen: list[Any], *, sign_first: bool) -> Callable[[], asyncssh.SSHClient]:
    """The connection's `SSHClient`: records a host key known_hosts does not trust into `seen` (for
    the error), and with `sign_first` (one named key) logs in with one user-auth request."""

    class _Client(asyncssh.SSHClient):
        def connection_made(self, conn: Connection) -> None:
            self._conn = conn
            from skyward.fastpaths.asyncssh_early_auth import early_auth

            early_auth(conn)  # the login with the service request, not a round trip after it

        def begin_auth(self, username: str) -> None:
            if sign_first:
                from skyward.fastpaths.asyncssh_auth import sign_first as start_signed

                start_signed(self._conn)

        def validate_host_public_key(self, host: str, addr: str, port: int, key: Any) -> bool:
            seen.append(key)  # only called for a key that known_hosts does not trust
            return False

    return _Client


def ciphers() -> list[str]:
    """asyncssh's defaults with AES-GCM first: hardware AES halves the per-message latency of the
    default chacha20-poly1305 (measured on loopback: ~190 us against ~340 us per echo). Public: the
    benchmarks' raw channel floor (benchmarks/case_ssh.py) opens its channel with the same ones."""
    from asyncssh.encryption import get_default_encryption_algs

    algs = list(get_default_encryption_algs())
    preferred = [a for a in (b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com") if a in algs]
    return [a.decode() for a in preferred + [a for a in algs if a not in preferred]]


def is_permanent(exc: BaseException) -> bool:
    """Failures that retrying cannot fix: a host key or credentials problem."""
    return isinstance(exc, HostKeyError | SSHAuthError)


async def connect_with_retry(
    host: str,
    port: int,
    user: str | None,
    *,
    deadline: float,
    interval: float = 1.0,
    on_retry: Callable[[BaseException, float], None] | None = None,
    **kwargs: Any,
) -> Connection:
    """`connect`, retried with exponential backoff (from `interval`, doubling, at most 10 s) until
    `deadline` (a `time.monotonic()` value). Host key and credential errors are not retried."""

    async def attempt() -> Connection:
        left = deadline - time.monotonic()
        return await connect(host, port, user, timeout=max(min(left, 30.0), 1.0), **kwargs)

    return await retry(
        attempt,
        retry_on=lambda exc: isinstance(exc, ConnectionError) and not is_permanent(exc),
        delays=backoff(max(interval, 0.1), cap=10.0),
        deadline=deadline,
        on_retry=None if on_retry is None else lambda _tries, exc, wait: on_retry(exc, wait),
    )


# -- per-pool keys (clouds inject the public half at provision) ---------------------------------------


def pool_key(pool_id: str) -> tuple[Path, str]:
    """This pool's ed25519 key pair under `~/.skyward/keys/` (`$SKYWARD_HOME`), created mode 0600
    on first use; returns the private key's path and the public key's OpenSSH line."""
    from skyward.home import skyward_home

    folder = skyward_home() / "keys"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{pool_id}_ed25519"
    if not path.exists():
        key = asyncssh.generate_private_key("ssh-ed25519", comment=f"skyward {pool_id}")
        data = key.export_private_key()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        path.with_suffix(".pub").write_bytes(key.export_public_key())
    public = path.with_suffix(".pub").read_text().strip()
    return path, public


def remove_pool_key(pool_id: str) -> None:
    from skyward.home import skyward_home

    path = skyward_home() / "keys" / f"{pool_id}_ed25519"
    for file in (path, path.with_suffix(".pub")):
        with contextlib.suppress(FileNotFoundError):
            file.unlink()
