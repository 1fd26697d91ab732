"""Warm environments: a node keeps the venv an image built, and the next pool with that image reuses it.

An ML engineer reruns the same script on the same hosts dozens of times a day; rebuilding the venv
and reinstalling skyward each time is seconds of waiting for nothing. So on SSH hosts and cloud
machines the venv does not live in the pool's node folder (which is removed with the pool) but in
`<env root>/<key>/venv` (`~/.skyward/envs/...`), and the node folder's `venv` is a link to it.

The key (`environment_key`) is a digest of everything that decides what the venv holds: the
interpreter asked for, whether it sees the host's packages, `Image.apt`, `Image.pip` and its
indexes, where skyward comes from, and the content of the skyward wheels shipped. Anything that
does not change the venv stays out: `env`, `includes` and the plugin ops run for every pool, since
they are per pool (secrets, the user's code, mounts) and may have side effects a pool expects.

The script takes an exclusive `flock` on `<key>.lock` while it builds (two pools reaching one host
at once build once; the second waits and reuses), and marks `<key>/.ready` only after the
`skyward` phase succeeded, so a half-built environment is never reused: without the mark the
environment is built again from nothing. The worker's start, right after, is the check that
skyward imports there (no separate interpreter start for it): a worker that cannot import takes
the mark away before it exits (`skyward._environment_mark`, told the folder by `env.sh`'s
`SKYWARD_ENVIRONMENT`), and the node's start error carries its traceback. With the mark, the
venv, apt, pip and skyward phases only say so. The script says what it found on a marker line
(`DECISION`), and the client uploads the wheels only when it says cold: a warm node costs no
upload and no round trip of its own (the script waits for the wheels only on a cold node).

Environments stay on the host after the pool (they hold no secret: `env.sh` and the index
credentials live in the pool's node folder, which goes). Remove `~/.skyward/envs` to reclaim the
space; a cloud machine takes them with it when it ends.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from skyward import _environment_mark

#: The phases that build the environment (skipped on a warm node). `uv` runs after the warm check
#: and links the host's uv where there is one; on a warm node it installs none (`skyward.bootstrap.uv`).
ENVIRONMENT_PHASES: tuple[str, ...] = ("venv", "apt", "pip", "skyward")
#: The file in an environment's folder that says it is complete.
READY = _environment_mark.READY
#: The marker line by which the script tells the client what it found (`warm` or `cold`): the client
#: uploads skyward's wheels only on `cold`, without a round trip of its own to ask first.
DECISION = "::skyward-environment:"


def wheel_digest(path: Path) -> str:
    """A wheel's content digest (its bytes: local wheels keep their version across edits)."""
    stat = Path(path).stat()
    return _digest(str(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    """Read once per file version: every node of a pool asks for the same wheels."""
    return hashlib.blake2b(Path(path).read_bytes(), digest_size=12).hexdigest()


def environment_key(
    image: Any, python_spec: str, system_site_packages: bool, source: str, wheel_digests: Iterable[str]
) -> str:
    """The digest naming the environment that these inputs build (see the module docstring)."""
    indexes = [
        {"url": str(getattr(i, "url", i)), "packages": list(getattr(i, "packages", ()))}
        for i in getattr(image, "pip_indexes", ())
    ]
    identity = {
        "python": python_spec, "system_site_packages": bool(system_site_packages),
        "apt": list(image.apt), "pip": list(image.pip), "indexes": indexes, "source": source,
        "wheels": sorted(wheel_digests),
    }
    text = json.dumps(identity, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def environment_dir(root: str, key: str) -> str:
    return f"{root.rstrip('/')}/{key}"


def environment_for(
    image: Any, python: str | None, system_site_packages: bool, wheels: Iterable[Path], root: str
) -> str:
    """The folder under `root` of the environment that `image`, built with `python` and these
    local `wheels` (the client's skyward, source "local"), makes on a node. Reads the wheels."""
    from skyward.bootstrap.phases import interpreter_spec
    from skyward.bootstrap.wheels import resolve_source

    digests = [wheel_digest(w) for w in wheels]
    spec = interpreter_spec(image, python)
    key = environment_key(image, spec, system_site_packages, resolve_source(image), digests)
    return environment_dir(root, key)


def select(env_dir: str) -> str:
    """Bash (after `setup`): take the environment's build lock, then decide warm or cold.

    Sets `E` (the environment), `V` (its venv) and `__sky_warm` (1 when it is complete). A cold
    one is emptied first: what a cut-off build left is not trusted. The node folder's `venv`
    becomes a link to `$E/venv`.
    """
    e = shlex.quote(env_dir)
    return (
        f"E={e}\n"
        'V="$E/venv"\n'
        'mkdir -p "$(dirname "$E")"\n'
        'chmod 700 "$(dirname "$E")" 2>/dev/null || true\n'
        "if command -v flock >/dev/null 2>&1; then\n"
        '  exec 9>"$E.lock"\n'
        "  flock 9\n"
        "fi\n"
        f'if [ -f "$E/{READY}" ]; then\n'
        "  __sky_warm=1\n"
        f'  echo "{DECISION}warm"\n'
        '  echo "skyward bootstrap: reusing the environment $E (built for this image before)"\n'
        "else\n"
        "  __sky_warm=0\n"
        f'  echo "{DECISION}cold"\n'
        '  rm -rf "$E"\n'
        '  mkdir -p "$E"\n'
        "fi\n"
        'if [ -L "$W/venv" ] || [ ! -e "$W/venv" ]; then ln -sfn "$E/venv" "$W/venv"; '
        'else rm -rf "$W/venv" && ln -s "$E/venv" "$W/venv"; fi\n'
    )


def skip_when_warm(phase: str) -> str:
    """A rendered phase (`__sky_begin NAME` ... `__sky_done`) whose body runs only on a cold node."""
    head, _, rest = phase.partition("\n")
    body, done = rest[: -len("__sky_done\n")], rest[-len("__sky_done\n"):]
    if not head.startswith("__sky_begin ") or done != "__sky_done\n":
        raise ValueError(f"not a rendered phase: {phase[:60]!r}")
    # The body is not indented: a heredoc in it (the pip phase's pyproject.toml) must stay as written.
    return (
        f"{head}\n"
        'if [ "$__sky_warm" = 1 ]; then\n'
        '  echo "skyward bootstrap: already in the environment"\n'
        f"else\n{body}fi\n{done}"
    )


def seal() -> str:
    """Bash (after the `skyward` phase): mark a cold environment complete, then let others in."""
    return (
        f'if [ "$__sky_warm" != 1 ]; then : > "$E/{READY}"; fi\n'
        "if command -v flock >/dev/null 2>&1; then exec 9>&-; fi\n"
    )
