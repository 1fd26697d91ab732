"""Fast paths: shortcuts through other libraries' private internals, each with a public fallback.

Each one lives in a module of its own here (the torch one in `skyward_torch.group_patch`), detects
the internals it needs on the object it is about to use, and takes its fallback, the library's
public behaviour, when any is missing. `registry.FAST_PATHS` lists them all.

One switch turns them all off: `SKYWARD_FAST_PATHS=off` makes every fast path take its fallback,
for ruling a fast path out when something misbehaves, and for running the suite without them;
`SKYWARD_FAST_PATHS=off:NAME,NAME` turns off only those (the names of `registry.FAST_PATHS`), to
measure or rule out one at a time. It is read each time a fast path is detected (a pool's loop, an
SSH connection, a worker's process group), so it applies to what starts after it is set.
"""

from __future__ import annotations

import os

from skyward.errors import ConfigurationError

__all__ = ["SWITCH", "enabled"]

#: The environment variable that turns every fast path off.
SWITCH = "SKYWARD_FAST_PATHS"
_ON = ("", "on", "1", "true", "yes")
_OFF = ("off", "0", "false", "no")


def enabled(name: str) -> bool:
    """Whether the fast path `name` may be used: `SKYWARD_FAST_PATHS` unset or on, or off for
    other fast paths only."""
    value = os.environ.get(SWITCH, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    kind, _, names = value.partition(":")
    if kind not in _OFF or not names.strip():
        raise _bad_switch()
    from skyward.fastpaths.registry import FAST_PATHS

    off = {part.strip() for part in names.split(",") if part.strip()}
    known = {path.name for path in FAST_PATHS}
    if off - known:
        raise _bad_switch(sorted(off - known), sorted(known))
    return name not in off


def _bad_switch(unknown: list[str] | None = None, known: list[str] | None = None) -> ConfigurationError:
    what = f"names no fast path ({', '.join(unknown)}; they are: {', '.join(known or [])})" if unknown else (
        "is neither on, off nor off:NAME,NAME"
    )
    return ConfigurationError(
        f"{SWITCH}={os.environ.get(SWITCH, '')!r} {what}: set {SWITCH}=off to turn every fast path off, "
        f"{SWITCH}=off:NAME to turn off one, or unset it to use them"
    )
