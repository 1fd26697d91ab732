"""Lingering machines: a cloud pool's machines kept `Spec.ttl` seconds after it exits, for the next.

An ML engineer reruns the same script many times an hour; a cloud machine takes minutes to
launch and bootstrap, and seconds to reuse. With `Options(linger=True)` a pool that exits cleanly
*parks* its machines instead of deleting them: the workers stop, the SSH connections close, and
the machines stay up with only their environment. Nothing new keeps them alive: the node's
guardian (`skyward.guardian`) still holds the pool's lease, which nobody renews any more, so it
ends each machine `Spec.ttl` seconds later exactly as it would after a crashed client. A pool
whose spec is compatible (the same provider settings, machine, region, image and plugins: the
`compatibility` digest) that starts within that window *adopts* them: it claims the record, takes
over the parked pool's identity on the cloud (its tags, shared resources and login key: the
record's `Cluster`), renews the guardian's lease on its first login, finds the environment ready
and starts its workers: about a second instead of minutes. When it exits, it parks or deletes
them in turn; `sky ls` shows parked machines as idle with their expiry, `sky down` ends them.

The same record serves a pool server (`skyward.server`): while it holds a cloud pool, the pool's
record is *held* (`held/<pool>.parked`, never claimed by another pool); a server restarted after a
crash releases it (`release_held`) and starts the pool again, which adopts its machines if their
guardians have not ended them yet.

One record per parked pool, `~/.skyward/lingering/<pool>.parked` (mode 0600, in `$SKYWARD_HOME`):
the pool's `Cluster` (its spec left out: a provider config may hold an API key, and nothing
secret is written here), its machines and when the lease lapses. A claim renames the file,
which only one claimer can do; a record past its expiry is pruned, with the login key it kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog

from skyward.providers.base import Cluster, Instance

#: A record is adopted only if this much of its lease is left: the first login of the adopting
#: pool must renew the guardian's lease before it lapses (the guardian counts from its last
#: renewal, a second or two before the record's expiry was written).
CLAIM_MARGIN = 15.0
#: The record files' suffix.
SUFFIX = ".parked"


@attrs.frozen
class Parked:
    """One parked pool: whose machines, on which provider, for which specs, until when."""

    pool: str
    provider: str
    compatibility: str
    expires: float
    cluster: Cluster
    instances: tuple[Instance, ...]

    def left(self, now: float | None = None) -> float:
        """Seconds until the machines' guardians end them."""
        return self.expires - (time.time() if now is None else now)


def folder() -> Path:
    from skyward.home import skyward_home

    return skyward_home() / "lingering"


def compatibility(provider: str, spec: Any) -> str:
    """A digest of what a reused machine must match: the provider and its settings, the machine
    asked for (accelerator, CPUs, memory, disk, architecture, allocation, region, price cap), the
    image and the plugins (by name: their hooks are functions, whose reprs differ per process).
    Node count and ttl are left out: a pool of another size adopts what fits."""
    plugins = tuple(getattr(p, "name", type(p).__name__) for p in getattr(spec, "plugins", ()))
    fields = ("provider", "accelerator", "vcpus", "memory_gb", "disk_gb", "architecture", "allocation",
              "region", "max_hourly_cost", "image", "volumes")
    text = repr((provider, tuple(repr(getattr(spec, f, None)) for f in fields), plugins))
    return hashlib.sha256(text.encode()).hexdigest()


def key_kept(pool: str) -> bool:
    """Whether the parked pool's login key is still on disk (without it nobody can log in)."""
    from skyward.home import skyward_home

    return (skyward_home() / "keys" / f"{pool}_ed25519").is_file()


def _write(parked: Parked, where: Path) -> Path:
    """Write the record (0600, atomically: a reader never sees half of it), without the spec."""
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = where / f"{parked.pool}{SUFFIX}"
    kept = attrs.evolve(parked, cluster=attrs.evolve(parked.cluster, spec=None))
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        pickle.dump(kept, f)
    os.replace(tmp, path)
    return path


def hold(parked: Parked) -> Path:
    """Keep a running pool's record where no pool claims it (a pool server's: `release_held`)."""
    return _write(parked, folder() / "held")


def unhold(pool: str) -> None:
    """The held pool ended as it should: its record goes (its key is the pool's own business)."""
    with contextlib.suppress(FileNotFoundError):
        (folder() / "held" / f"{pool}{SUFFIX}").unlink()


def release_held(pool: str, expires: float) -> bool:
    """Make a held record claimable until `expires` (a restarted server, for its next start of
    the pool to adopt the machines); False when there is none."""
    path = folder() / "held" / f"{pool}{SUFFIX}"
    record = _read(path) if path.is_file() else None
    if record is None:
        return False
    _write(attrs.evolve(record, expires=expires), folder())
    path.unlink()
    return True


def park(parked: Parked) -> Path:
    """Write the record of a parked pool, claimable by the next compatible pool."""
    path = _write(parked, folder())
    unhold(parked.pool)
    structlog.get_logger().info(
        "skyward.pool_parked", pool=parked.pool, provider=parked.provider,
        instances=", ".join(i.id for i in parked.instances), seconds=round(parked.left()),
    )
    return path


def _read(path: Path) -> Parked | None:
    try:
        with path.open("rb") as f:
            record = pickle.load(f)  # noqa: S301 - our own file, mode 0600 in the user's home
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError):
        return None
    return record if isinstance(record, Parked) else None


def parked(now: float | None = None) -> list[Parked]:
    """The records still in their window (expired ones are pruned on the way)."""
    now = time.time() if now is None else now
    found: list[Parked] = []
    if not folder().is_dir():
        return found
    for path in sorted(folder().iterdir()):
        if not path.name.endswith(SUFFIX):
            continue
        record = _read(path)
        if record is None or record.left(now) <= 0:
            _prune(path, record)
        else:
            found.append(record)
    return found


def claim(provider: str, compatibility_digest: str, now: float | None = None) -> Parked | None:
    """Take the parked pool with the most time left whose machines fit: its record is renamed
    away first, so that no second pool can take it too."""
    now = time.time() if now is None else now
    fits = [
        p for p in parked(now)
        if p.provider == provider and p.compatibility == compatibility_digest and p.left(now) > CLAIM_MARGIN
    ]
    for record in sorted(fits, key=lambda p: -p.expires):
        path = folder() / f"{record.pool}{SUFFIX}"
        taken = path.with_suffix(f".claimed-{os.getpid()}")
        try:
            os.rename(path, taken)
        except FileNotFoundError:
            continue  # another pool took it first
        with contextlib.suppress(FileNotFoundError):
            taken.unlink()
        return record
    return None


def forget(pools: Sequence[str]) -> None:
    """Drop the records of these pools (`sky down` ended their machines); their keys go too."""
    for pool in pools:
        path = folder() / f"{pool}{SUFFIX}"
        if path.exists():  # a pool that is not parked keeps its key: it may still be running
            _prune(path, None, pool)
        unhold(pool)


def _prune(path: Path, record: Parked | None, pool: str | None = None) -> None:
    from skyward.transport.ssh_connect import remove_pool_key

    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    name = pool or (record.pool if record is not None else None)
    if name is not None:
        remove_pool_key(name)
