"""Fast paths: shortcuts through other libraries' private internals, each with a public fallback.

Each one lives in a module of its own here (the torch one in `skyward_torch.group_patch`), detects
the internals it needs on the object it is about to use, and takes its fallback, the library's
public behaviour, when any is missing. `registry.FAST_PATHS` lists them all.

One switch turns them all off: `SKYWARD_FAST_PATHS=off` makes every fast path take its fallback,
for ruling a fast path out when something misbehaves, and for running the suite without them.
It is read each time a fast path is detected (a pool's loop, an SSH connection, a worker's
process group), so it applies to what starts after it is set.
"""

from __future__ import annotations

import os

from skyward.errors import ConfigurationError

__all__ = ["SWITCH", "enabled"]

#: The environment variable that turns every fast path off.
SWITCH = "SKYWARD_FAST_PATHS"
_ON = ("", "on", "1", "true", "yes")
_OFF = ("off", "0", "false", "no")


def enabled() -> bool:
    """Whether fast paths may be used (`SKYWARD_FAST_PATHS` unset or on), False when it is off."""
    value = os.environ.get(SWITCH, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ConfigurationError(
        f"{SWITCH}={os.environ[SWITCH]!r} is neither on nor off: set {SWITCH}=off to turn every fast "
        f"path off, or unset it to use them"
    )
