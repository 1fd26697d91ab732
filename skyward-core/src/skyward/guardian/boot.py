"""The guardian started at a cloud machine's boot, before the client has ever logged in.

A client killed after the create call but before its first SSH login would otherwise leave a
billed machine with nothing on it to end it. So the machine's own boot (cloud-init user data, a
container's start command or onstart) starts the guardian: `BootGuardian.command` is one shell
line that unpacks the guardian (`agent.py`, packed as base64 of zlib, from `$SKYWARD_GUARDIAN`
or inlined) into the very folder the pool's first login will use
(`$HOME/.skyward/pools/<pool>/node-<node>`) and starts it there with the initial lease
(bootstrap timeout + ttl) and the machine's end command. The first login's start then finds it
holding `guardian.lock` and only opens its renewal: one guardian per node, adopted by the pool.
A machine without `python3` skips it quietly (the first login starts one with the venv's Python).
"""

from __future__ import annotations

import base64
import shlex
import zlib

import attrs

from skyward.guardian import FILE, source

#: The environment variable a container's start command reads the packed guardian from.
SOURCE_VARIABLE = "SKYWARD_GUARDIAN"
#: Unpacks the guardian: base64 of zlib on stdin, the program on stdout.
_UNPACK = (
    "import base64,sys,zlib; sys.stdout.buffer.write(zlib.decompress(base64.b64decode(sys.stdin.read())))"
)


def packed() -> str:
    """The guardian's program, compressed and in one line (about 7 kB): for an env variable."""
    return base64.b64encode(zlib.compress(source(), 9)).decode()


def pool_folder(home: str, pool_id: str, node: int) -> str:
    """The node folder as a shell word: `RemoteNodes.workdir` of the login whose home is `home`
    (itself a shell word, such as `"$HOME"`)."""
    return f"{home}/.skyward/pools/{shlex.quote(pool_id)}/node-{int(node)}"


@attrs.frozen
class BootGuardian:
    """What a machine's boot needs to start its guardian: the pool and node (its folder), the
    lease (ttl, and the initial one before any renewal) and the machine's end command."""

    pool_id: str
    node: int
    ttl: float
    initial: float
    end_command: str | None = None
    grace: float = 30.0

    def command(self, home: str = '"$HOME"', inline: bool = False) -> str:
        """One shell line, safe under `set -e`: unpack the guardian into the node folder and start it
        (it forks into a daemon and answers "started <pid>" or "running <pid>"); without `python3`,
        or without the packed source, nothing happens. `home` is a shell word (`"$HOME"`); the
        source is read from `$SKYWARD_GUARDIAN`, or with `inline` set in the line itself (user data,
        which has no environment of ours)."""
        q = shlex.quote
        packed_source = f'"${SOURCE_VARIABLE}"'
        prefix = f"{SOURCE_VARIABLE}={q(packed())}; " if inline else ""
        folder = pool_folder(home, self.pool_id, self.node)
        target = f"{folder}/{FILE}"
        args = (
            f"start --dir {folder} --ttl {float(self.ttl)!r} --initial {float(self.initial)!r}"
            f" --grace {float(self.grace)!r} --end-command {q(self.end_command or '')}"
        )
        return prefix + (
            f"if command -v python3 >/dev/null 2>&1 && [ -n {packed_source} ]; then "
            f"{{ mkdir -p {folder} && chmod 700 {folder} && printf %s {packed_source} | "
            f"python3 -c {q(_UNPACK)} > {target}.tmp && mv {target}.tmp {target} && "
            f"python3 {target} {args}; }} || echo 'skyward: the guardian did not start' >&2; fi"
        )
