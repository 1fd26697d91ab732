"""Skyward's per-user folders: its home (pools, keys, logs) and its cache.

A module of its own, with nothing but the standard library, because nearly every command of `sky`
needs one of these paths and nothing else of the logging (`skyward.observe.logging`), which loads
structlog, and structlog loads rich: 60-110 ms of every `sky` start.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["log_path", "skyward_cache", "skyward_home"]


def skyward_home() -> Path:
    """Skyward's per-user directory: `$SKYWARD_HOME`, else `~/.skyward`."""
    return Path(os.environ.get("SKYWARD_HOME") or "~/.skyward").expanduser()


def skyward_cache() -> Path:
    """Where Skyward keeps what it can make again from this install (assembled wheels, the
    workers' bytecode bundle): `$SKYWARD_CACHE_DIR`, else `skyward_home()`. Kept apart from the
    state (pools, keys, logs) so that several homes share one cache: a test suite or a CI job
    that gives every test its own `$SKYWARD_HOME` builds the wheels once, not once per pool."""
    cache = os.environ.get("SKYWARD_CACHE_DIR")
    return Path(cache).expanduser() if cache else skyward_home()


def log_path(file: str) -> Path:
    """Where `file` points; the `~/.skyward/` prefix follows `$SKYWARD_HOME`."""
    prefix = "~/.skyward/"
    if file.startswith(prefix):
        return skyward_home() / file[len(prefix):]
    return Path(file).expanduser()
