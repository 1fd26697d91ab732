"""uv on a node: found where the host has one, else installed once per host, never once per pool.

Every later phase builds with uv (the venv, the pip installs, skyward's own wheels), so a node
needs one. A host that has uv (on `PATH`, or `~/.local/bin/uv` as `pip install --user uv` leaves
it) uses its own. A fresh cloud VM has none: the first pool on it installs the pinned `UV_VERSION`
into `~/.skyward/uv/<version>/`, where every later pool and node folder on that host finds it (a
17.6 MB download from the package index, 1.3-1.8 s, paid once per host instead of once per pool
and node). Keyed by version, so a client that pins another uv installs that one beside it.

The install takes an exclusive `flock` on `<version>.lock` (two pools reaching a fresh host at once
install once) and lands in `<version>.partial` first, moved into place whole: a cut-off install is
never found half-made. Where the host's `python3` has no pip or the host cannot reach the index,
the node asks the client for the wheel: the script prints `::skyward-need:uv:<machine>:<path>`
and waits; the client (`serve_request`) uploads the wheel it has or downloads for that machine
(`client_wheel`, kept in `~/.skyward/wheels/uv`) to `<path>`, then `<path>.ready` (or, when it has
none to give, `<path>.failed` with the reason, which the script prints before it fails). The
script unpacks the `uv` binary from the wheel with the standard library: no pip needed.

A warm environment (`environments`) needs no uv at all: its venv is built. The script decides warm
or cold before this phase, and on a warm node without uv this phase installs nothing.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["NEED", "UV_VERSION", "client_wheel", "serve_request", "uv_lines"]

#: The uv a node without one gets (`~/.skyward/uv/<version>`).
UV_VERSION = "0.13.9"
#: Where, on a node, the per-host installs live (bash: `$HOME` is the login's).
UV_ROOT = '"${HOME:-/tmp}/.skyward/uv"'
#: The marker a node prints to ask the client for something it cannot fetch itself.
NEED = "::skyward-need:"

#: Unpacks the `uv` and `uvx` binaries of a uv wheel (argv[1]) into a folder's bin/ (argv[2]).
_UNPACK = (
    "import os, sys, zipfile\n"
    "wheel, target = sys.argv[1], sys.argv[2]\n"
    "os.makedirs(os.path.join(target, 'bin'), exist_ok=True)\n"
    "with zipfile.ZipFile(wheel) as z:\n"
    "    names = [n for n in z.namelist() if '.data/scripts/' in n]\n"
    "    if not any(n.endswith('/uv') for n in names):\n"
    "        sys.exit('skyward bootstrap: ' + wheel + ' holds no uv binary')\n"
    "    for n in names:\n"
    "        path = os.path.join(target, 'bin', n.rsplit('/', 1)[1])\n"
    "        with z.open(n) as src, open(path, 'wb') as dst:\n"
    "            dst.write(src.read())\n"
    "        os.chmod(path, 0o755)\n"
)


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ", lambda line: True)


def uv_lines(bootstrap_python: str, *, version: str = UV_VERSION) -> str:
    """Bash for the body of the `uv` phase (`phases.uv_phase` wraps it): sets `__sky_uv` and links
    it as `$W/bin/uv` (see the module docstring). `bootstrap_python` is the interpreter that
    installs uv where the host has none.
    """
    py = shlex.quote(bootstrap_python)
    pip = (
        f'PIP_BREAK_SYSTEM_PACKAGES=1 {py} -m pip install -q --disable-pip-version-check '
        f'--no-warn-script-location --target "$U/{version}.partial" "uv=={version}"'
    )
    shown = shlex.quote(f"pip install --target ~/.skyward/uv/{version} uv=={version}")
    unreachable = (
        f"skyward bootstrap: uv {version} could not be installed from the package index here; "
        "asking the client for it"
    )
    install = (
        'mkdir -p "$U"\n'
        'chmod 700 "$U" 2>/dev/null || true\n'
        "if command -v flock >/dev/null 2>&1; then\n"
        f'  exec 8>"$U/{version}.lock"\n'
        "  flock 8\n"
        "fi\n"
        f'if [ ! -x "$U/{version}/bin/uv" ]; then\n'
        f'  rm -rf "$U/{version}.partial" "$U/{version}"\n'
        f"  if {py} -m pip --version >/dev/null 2>&1 && {{ __sky_cmd {shown}; {pip}; }}; then\n"
        "    :\n"
        "  else\n"
        f'    rm -rf "$U/{version}.partial"\n'
        f"    echo {shlex.quote(unreachable)} >&2\n"
        + _indent(_indent(_ask_client(py, version)))
        + "  fi\n"
        f'  mv "$U/{version}.partial" "$U/{version}"\n'
        "fi\n"
        "if command -v flock >/dev/null 2>&1; then exec 8>&-; fi\n"
    )
    lines = (
        f"U={UV_ROOT}\n"
        '__sky_uv=""\n'
        "if command -v uv >/dev/null 2>&1; then\n"
        '  __sky_uv=$(command -v uv)\n'
        'elif [ -x "${HOME:-/nonexistent}/.local/bin/uv" ]; then\n'
        '  __sky_uv="$HOME/.local/bin/uv"\n'
        f'elif [ -x "$U/{version}/bin/uv" ]; then\n'
        f'  __sky_uv="$U/{version}/bin/uv"\n'
        'elif [ "${__sky_warm:-0}" = 1 ]; then\n'
        '  echo "skyward bootstrap: no uv here, and none needed: the environment is built"\n'
        "else\n"
        + _indent(install)
        + f'  __sky_uv="$U/{version}/bin/uv"\n'
        "fi\n"
        'if [ -n "$__sky_uv" ]; then\n'
        '  ln -sf "$__sky_uv" "$W/bin/uv"\n'
        # Its path, not `uv --version`: one process less on a cold node (a broken uv fails the
        # venv phase next, with uv's own words).
        '  echo "skyward bootstrap: uv is $__sky_uv"\n'
        "fi\n"
    )
    return lines


def _ask_client(py: str, version: str) -> str:
    """Bash: ask the client for the uv wheel (the `NEED` marker), wait for it, unpack it."""
    return (
        f'__sky_req="$W/uv-{version}.whl"\n'
        'rm -f "$__sky_req" "$__sky_req.ready" "$__sky_req.failed"\n'
        f"printf '{NEED}uv:%s:%s\\n' \"$(uname -m)\" \"$__sky_req\"\n"
        'while [ ! -e "$__sky_req.ready" ] && [ ! -e "$__sky_req.failed" ]; do sleep 0.1; done\n'
        'if [ -e "$__sky_req.failed" ]; then cat "$__sky_req.failed" >&2; exit 1; fi\n'
        f"__sky_cmd {shlex.quote(f'unpack the uv {version} wheel the client sent')}\n"
        # One line (`exec` of its repr): the caller indents this text, which a multi-line `-c` must not be.
        f'{py} -c {shlex.quote(f"exec({_UNPACK!r})")} "$__sky_req" "$U/{version}.partial"\n'
        'rm -f "$__sky_req" "$__sky_req.ready"\n'
    )


def parse_request(line: str) -> tuple[str, str, str] | None:
    """(what, machine, path) of a `NEED` marker line, None when the line is not one."""
    if not line.startswith(NEED):
        return None
    what, _, rest = line[len(NEED):].partition(":")
    machine, _, path = rest.partition(":")
    if not what or not machine or not path.startswith("/"):
        return None
    return what, machine, path


def _platforms(machine: str) -> list[str]:
    """The wheel platform tags a Linux host of `uname -m` = `machine` runs (uv publishes manylinux)."""
    return [f"manylinux_2_17_{machine}", f"manylinux2014_{machine}", f"manylinux_2_28_{machine}",
            f"musllinux_1_1_{machine}"]


def _cached(cache: Path, machine: str, version: str) -> Path | None:
    found = sorted(cache.glob(f"uv-{version}-*{machine}*.whl"))
    return found[0] if found else None


def client_wheel(machine: str, *, version: str = UV_VERSION, cache: Path | None = None) -> Path:
    """The uv wheel for a Linux host of `uname -m` = `machine`: kept under `~/.skyward/wheels/uv`,
    downloaded there by pip (the client's own index settings) the first time one is asked for.

    Raises `RuntimeError` naming what went wrong when pip cannot get it.
    """
    from skyward.bootstrap.wheels import wheel_cache_dir

    cache = cache if cache is not None else wheel_cache_dir() / "uv"
    cache.mkdir(parents=True, exist_ok=True)
    found = _cached(cache, machine, version)
    if found is not None:
        return found
    with tempfile.TemporaryDirectory(prefix="skyward-uv-", dir=cache) as staging:
        command = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                   "--no-deps", "--only-binary=:all:", "-d", staging, f"uv=={version}"]
        for platform in _platforms(machine):
            command += ["--platform", platform]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        wheels = sorted(Path(staging).glob("uv-*.whl"))
        if done.returncode != 0 or not wheels:
            raise RuntimeError(
                f"the client could not download uv {version} for {machine} either "
                f"(pip download: {(done.stderr or done.stdout).strip()[-400:] or 'no wheel'}); install uv "
                "on the host (https://docs.astral.sh/uv/) or give it access to the package index"
            )
        target = cache / wheels[0].name
        wheels[0].replace(target)
        return target


async def serve_request(runner: Any, line: str) -> None:
    """Answer a node's `NEED` marker `line`: upload what it asks for, or the reason it cannot have it."""
    request = parse_request(line)
    if request is None:
        return
    what, machine, path = request
    staging = Path(tempfile.mkdtemp(prefix="skyward-need-"))
    try:
        if what != "uv":
            reason = f"skyward bootstrap: the client has no {what!r} to send\n"
        else:
            try:
                wheel = await asyncio.to_thread(client_wheel, machine)
            except (RuntimeError, OSError, TimeoutError) as exc:
                reason = f"skyward bootstrap: uv is missing here and {exc}\n"
            else:
                try:
                    await runner.put(wheel, path)
                    (staging / "ready").touch()
                    await runner.put(staging / "ready", f"{path}.ready")
                    return
                except OSError as exc:  # the script is told, not left waiting for its timeout
                    reason = f"skyward bootstrap: the client could not upload the uv wheel: {exc}\n"
        (staging / "failed").write_text(reason)
        await runner.put(staging / "failed", f"{path}.failed")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
