"""The pieces of the bootstrap script: one function per phase, each returning its bash text.

`skyward.bootstrap.render` puts them together in order (its docstring describes the script as a
whole: markers, phases, scoped indexes, `env.sh`, resuming); this module holds how each phase is
written, so the order and the contract read in one short module and the shell in another. What
the bootstrap installs of skyward itself, and its `skyward` phase, are `skyward_installs`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import sys
from typing import TYPE_CHECKING, Any

from skyward.bootstrap.ops import Op

if TYPE_CHECKING:
    from skyward.bootstrap.skyward_installs import SkywardInstalls

#: Set to 1 by the runner (`run_bootstrap(resume=True)`) when this run resumes one a lost connection cut off.
RESUME = "SKYWARD_BOOTSTRAP_RESUME"

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
#: What may not stand in a phase name or a file named after one.
UNSAFE_PHASE = re.compile(r"[^A-Za-z0-9._-]+")


PRELUDE = r"""#!/usr/bin/env bash
# Skyward node bootstrap, rendered by skyward.bootstrap.render. Markers on stdout:
#   ::skyward-phase:<name>:start|done|fail:<rc>   ::skyward-command:<cmd>   ::skyward-failed-command:<cmd>
set -euo pipefail
__sky_phase=""
__sky_on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$__sky_phase" ]; then
    printf '::skyward-phase:%s:fail:%s\n' "$__sky_phase" "$rc"
  fi
  if [ -n "${__sky_status:-}" ] && [ -n "${W:-}" ] && [ -d "$W" ]; then
    { echo "$rc" > "$W/$__sky_status.tmp" && mv -f "$W/$__sky_status.tmp" "$W/$__sky_status"; } || true
  fi
}
trap __sky_on_exit EXIT
__sky_begin() { __sky_phase=$1; printf '::skyward-phase:%s:start\n' "$1"; }
__sky_done() { printf '::skyward-phase:%s:done\n' "$__sky_phase"; __sky_phase=""; }
__sky_cmd() { local c=${1//'$W'/$W}; printf '::skyward-command:%s\n' "${c//$'\n'/ }"; }
__sky_squote() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

"""


#: The variable naming the file in the node folder where the script's exit status goes as it ends
#: (its EXIT trap), when set by the script's first lines: a worker's start sent before the script
#: ended waits for that file (`skyward.transport.ssh_link.keeper_command`). A name per run, so that
#: no start finds the status of a run before it.
STATUS_VARIABLE = "__sky_status"


def setup(workdir: str) -> str:
    w = shlex.quote(workdir)
    return (
        f"W={w}\n"
        'mkdir -p "$W" "$W/bin"\n'
        'chmod 700 "$W"\n'
        'cd "$W"\n'
        # Which ops completed counts only for the run that resumes this one (see op_phase).
        f'if [ "${{{RESUME}:-}}" != 1 ]; then rm -f "$W"/bootstrap/*.done; fi\n'
    )


def _run(command: str, shown: str | None = None) -> str:
    """A command line preceded by its `::skyward-command:` marker (`shown` when the text differs)."""
    return f"__sky_cmd {shlex.quote(shown if shown is not None else command)}\n{command}\n"


def _phase(name: str, lines: str) -> str:
    return f"__sky_begin {shlex.quote(name)}\n{lines}__sky_done\n"


def interpreter_spec(image: Any, python: str | None) -> str:
    if python is None:
        return str(image.python_version())
    if python == "auto":
        return f"{sys.version_info.major}.{sys.version_info.minor}"
    return python


def _bootstrap_python(python_spec: str) -> str:
    """The interpreter that installs uv when the node has none: the given one, else python3."""
    return python_spec if "/" in python_spec else "python3"


def uv_phase(python_spec: str) -> str:
    """The `uv` phase (`skyward.bootstrap.uv`): the host's uv, else the one installed once per host."""
    from skyward.bootstrap.uv import uv_lines

    return _phase("uv", uv_lines(_bootstrap_python(python_spec)))


def venv_phase(python_spec: str, system_site_packages: bool = False, *, shared: bool = False) -> str:
    # `system_site_packages` (SSH(python=...)): the venv also sees the host interpreter's packages.
    # `shared`: the venv is a warm environment's, `$V` already names it (`environments.select`).
    flag = " --system-site-packages" if system_site_packages else ""
    spec = shlex.quote(python_spec + (" +system-site-packages" if system_site_packages else ""))
    lines = (
        ("" if shared else 'V="$W/venv"\n')
        + 'if [ -x "$V/bin/python" ] && '
        + f'[ "$(cat "$V/.skyward-python" 2>/dev/null || true)" = {spec} ]; then\n'
        '  echo "skyward bootstrap: reusing the virtual environment at $V"\n'
        "else\n"
        '  rm -rf "$V"\n'
        + _indent(_run(f'"$W/bin/uv" venv{flag} --python {shlex.quote(python_spec)} "$V"',
                       f"uv venv{flag} --python {python_spec} $W/venv"))
        + (_indent(_host_venv_site(python_spec)) if system_site_packages else "")
        + f'  printf "%s\\n" {spec} > "$V/.skyward-python"\n'
        "fi\n"
    )
    return _phase("venv", lines)


#: Run by the named interpreter with the path of a .pth file in the node venv (one line: the script
#: indents it): when that interpreter is a virtual environment's, the file makes the node venv load
#: its site-packages as site dirs, so their own .pth files (editable installs...) apply too.
_HOST_SITE_PTH = (
    "import os, pathlib, site, sys; "
    "dirs = [d for d in site.getsitepackages([sys.prefix]) if os.path.isdir(d)] "
    "if sys.prefix != sys.base_prefix else []; "
    'dirs and pathlib.Path(sys.argv[1]).write_text("".join('
    'f"import site; site.addsitedir({d!r})\\n" for d in dirs))'
)


def _host_venv_site(python_spec: str) -> str:
    """Lines that let the node venv see the packages of a named interpreter that is itself a venv's.

    uv builds the node venv on the base interpreter of `/opt/venv/bin/python`, so
    `--system-site-packages` shows the base's packages, not the ones installed in /opt/venv (an
    AMI's or image's venv with its CUDA torch). A .pth file in the node venv adds them, after the
    node venv's own site-packages: `Image.pip` still installs on top. Nothing is written for a
    system interpreter, or a version uv finds (`"3.12"`): `--system-site-packages` covers those.
    """
    py = shlex.quote(python_spec)
    purelib = '"$V/bin/python" -c \'import sysconfig; print(sysconfig.get_path("purelib"))\''
    # Only a venv's interpreter has a pyvenv.cfg beside it or one folder up (where Python itself
    # looks): any other is not started at all, which saves two interpreter starts per cold node.
    return (
        f'__sky_py=$(command -v {py} 2>/dev/null || true); __sky_pyd=$(dirname "${{__sky_py:-/}}")\n'
        'if [ -n "$__sky_py" ] && { [ -f "$__sky_pyd/pyvenv.cfg" ] || '
        '[ -f "$(dirname "$__sky_pyd")/pyvenv.cfg" ]; }; then\n'
        f'  __sky_cmd {shlex.quote(f"add the site-packages of {python_spec} to $W/venv if it is a venv")}\n'
        f'  {py} -c {shlex.quote(_HOST_SITE_PTH)} "$({purelib})/_skyward_host_venv.pth"\n'
        "fi\n"
    )


_APT_SUDO = (
    'if [ "$(id -u)" -eq 0 ]; then __sky_sudo=""\n'
    'elif command -v sudo >/dev/null 2>&1; then __sky_sudo="sudo -n"\n'
)


def apt_update_early() -> str:
    """Bash (before the venv phase): on a node that will run the apt phase, `apt-get update` starts
    in the background, so the index download overlaps the venv (and the Python uv may download for
    it); the apt phase waits for it and shows its output. Without root or sudo nothing starts."""
    return (
        '__sky_apt_pid=""\n'
        'if [ "${__sky_warm:-0}" != 1 ]; then\n'
        + _indent(_APT_SUDO + 'else __sky_sudo=none\nfi\n')
        + '  if [ "$__sky_sudo" != none ]; then\n'
        '    ($__sky_sudo apt-get update > "$W/apt-update.log" 2>&1) < /dev/null &\n'
        "    __sky_apt_pid=$!\n"
        "  fi\n"
        "fi\n"
    )


def apt_phase(packages: tuple[str, ...]) -> str:
    quoted = " ".join(shlex.quote(p) for p in packages)
    install = (
        # `--`: a package named like an option (`-o...`) is taken for a package, never an option.
        "$__sky_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
        f"-- {quoted}"
    )
    lines = (
        _APT_SUDO
        + "else\n"
        '  echo "skyward bootstrap: Image.apt needs root, and this user is not root and has no sudo" >&2\n'
        "  exit 1\n"
        "fi\n"
        '__sky_cmd "apt-get update"\n'
        'if [ -n "${__sky_apt_pid:-}" ]; then\n'  # started early (`apt_update_early`): its end
        '  __sky_rc=0; wait "$__sky_apt_pid" || __sky_rc=$?\n'
        '  cat "$W/apt-update.log"; [ "$__sky_rc" -eq 0 ] || exit "$__sky_rc"\n'
        "else\n"
        "  $__sky_sudo apt-get update\n"
        "fi\n"
        + _run(install, f"apt-get install -y --no-install-recommends -- {quoted}")
    )
    return _phase("apt", lines)


def await_uploads(marker: str, *, cold_only: bool = False) -> str:
    """Waits until the client has written `marker`: its uploads (wheels, includes) go on while the
    first phases run, and what follows needs them. Not a phase of its own: usually they are there
    already. A client gone meanwhile leaves the wait to its runner's timeout or to the guardian,
    which ends the bootstrap's process group. `cold_only`: the uploads are skyward's wheels only,
    which a warm environment does not need (the client sends none there, nor the marker)."""
    m = shlex.quote(marker)
    warm = '[ "${__sky_warm:-0}" != 1 ] && ' if cold_only else ""
    return (
        f"if {warm}[ ! -e {m} ]; then\n"
        "  echo 'skyward bootstrap: waiting for the uploads (wheels, includes)'\n"
        f"  while [ ! -e {m} ]; do sleep 0.02; done\n"
        "fi\n"
    )


def requirement_name(requirement: str) -> str | None:
    """The normalized distribution name of a PEP 508 requirement; None for a URL or a path."""
    text = requirement.strip()
    if "://" in text.split("@", 1)[0] or text.startswith((".", "/", "~")):
        return None
    match = _NAME.match(text)
    return normalize(match.group(1)) if match else None


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_phase(
    packages: tuple[str, ...], indexes: tuple[Any, ...], skyward: SkywardInstalls | None = None
) -> str:
    """`Image.pip` in one `uv pip install`; with `skyward` (`SkywardInstalls.joins_pip`), skyward-core
    with its dependencies and the sibling distributions without theirs join that resolve: one uv
    run and one round of index requests, not three, and one consistent set of versions."""
    return _phase("pip", _uv_install(packages, indexes, skyward))


def _uv_install(packages: tuple[str, ...], indexes: tuple[Any, ...], skyward: SkywardInstalls | None) -> str:
    """One `uv pip install` of `packages` and, with `skyward`, of skyward's distributions.

    The siblings' own dependencies (boto3, vastai-sdk: client-side SDKs) are left out of the one
    resolve by uv's `dependency-metadata`, which declares them without any, as `--no-deps` did in a
    uv run of their own. It goes in a requirements `pyproject.toml`, with each `PipIndex` scoped to
    its packages; uv reads `dependency-metadata` only from configuration it discovers (`--project`;
    the user's `uv.toml` still applies) and sources from requirements (`-r`)."""
    group = (*skyward.with_deps, *skyward.no_deps) if skyward is not None else ()
    flags = skyward.flags(group) if skyward is not None else ""
    bare = skyward.bare_names if skyward is not None else ()
    install = f'"$W/bin/uv" pip install --python "$V/bin/python"{flags}'
    shown = f"uv pip install --python $W/venv/bin/python{flags}"
    if not indexes and not bare:  # `--`: a requirement is never read as one of uv's options
        quoted = " ".join(shlex.quote(p) for p in (*group, *packages))
        return _run(f"{install} -- {quoted}", f"{shown} -- {quoted}")
    # Requirements an index is scoped to go in the file; the rest stay on the command line.
    named = [p for p in packages if requirement_name(p) is not None] if indexes else []
    other = [p for p in packages if p not in named]
    toml = _requirements_toml(named, indexes, bare)
    delimiter = _delimiter("SKYWARD_REQUIREMENTS", toml)
    extra = "".join(f" {shlex.quote(p)}" for p in (*group, *other))
    extra = f" --{extra}" if extra else ""
    # The index URLs may carry credentials (`https://user:password@host`), which uv reads from
    # here: the file is private to the node's user, like env.sh (`rm` first: an older one keeps its mode).
    return (
        'mkdir -p "$W/requirements"\n'
        'rm -f "$W/requirements/pyproject.toml"\n'
        f"(umask 077 && cat > \"$W/requirements/pyproject.toml\" <<'{delimiter}'\n{toml}{delimiter}\n)\n"
        + _run(
            f'{install} --project "$W/requirements" -r "$W/requirements/pyproject.toml"{extra}',
            f"{shown} --project $W/requirements -r $W/requirements/pyproject.toml{extra}",
        )
    )


def _requirements_toml(packages: list[str], indexes: tuple[Any, ...], bare: tuple[str, ...] = ()) -> str:
    wanted = {requirement_name(p) for p in packages}
    lines = [
        "# Image.pip for this node, with each PipIndex scoped to its packages (rendered by skyward).",
        "[project]",
        'name = "skyward-node-requirements"',
        'version = "0"',
        "dependencies = [" + ", ".join(json.dumps(p) for p in packages) + "]",
        "",
        "[tool.uv.sources]",
    ]
    pinned: set[str] = set()
    for i, index in enumerate(indexes):
        for package in index.packages:
            name = requirement_name(package)
            if name is not None and name in wanted and name not in pinned:
                pinned.add(name)
                lines.append(f'{json.dumps(name)} = {{ index = "skyward-{i}" }}')
    for i, index in enumerate(indexes):
        lines += ["", "[[tool.uv.index]]", f'name = "skyward-{i}"', f"url = {json.dumps(index.url)}"]
        lines.append("explicit = true")
    for name in bare:  # installed without their dependencies (see `_uv_install`)
        lines += ["", "[[tool.uv.dependency-metadata]]", f"name = {json.dumps(name)}", "requires-dist = []"]
    return "\n".join(lines) + "\n"


def env_phase(image: Any, workdir: str, venv: str, environment: str | None = None) -> str:
    """`env.sh`, for later phases and the worker; it names a warm `environment` (`_environment_mark`)."""
    static = [
        "# Skyward node environment (POSIX sh): sourced by later bootstrap phases and by the worker launch.",
        "export PYTHONUNBUFFERED=1",
    ]
    static += [f"export SKYWARD_ENVIRONMENT={shlex.quote(environment)}"] if environment is not None else []
    static += [f"export {name}={shlex.quote(value)}" for name, value in image.env.items()]
    static += [
        f"export SKYWARD_WORKDIR={shlex.quote(workdir)}",
        f"export SKYWARD_VENV={shlex.quote(venv)}",
        f"export VIRTUAL_ENV={shlex.quote(venv)}",
        f'export PATH={shlex.quote(f"{venv}/bin:{workdir}/bin")}:"$PATH"',
    ]
    content = "\n".join(static) + "\n"
    delimiter = _delimiter("SKYWARD_ENV", content)
    lines = (
        '__sky_cmd "write $W/env.sh"\n'
        'rm -f "$W/env.sh"\n'  # an env.sh left by an older run keeps its mode when overwritten
        f"(umask 077 && cat > \"$W/env.sh\" <<'{delimiter}'\n{content}{delimiter}\n)\n"
        '. "$W/env.sh"\n'
    )
    for name, snippet in image.shell_vars.items():
        lines += (
            _run(f"__sky_value=$(bash -c {shlex.quote(snippet)})", f"{name}=$({snippet})")
            + f'export {name}="$__sky_value"\n'
            + f"printf 'export {name}=%s\\n' \"$(__sky_squote \"$__sky_value\")\" >> \"$W/env.sh\"\n"
        )
    return _phase("env", lines)


def includes_phase(includes_dir: str) -> str:
    d = shlex.quote(includes_dir)
    export = f"export PYTHONPATH={d}" + '${PYTHONPATH:+":$PYTHONPATH"}'
    missing = (
        f"skyward bootstrap: the includes directory {includes_dir} is missing; the provider uploads "
        "Image.includes there before the bootstrap"
    )
    lines = (
        f"__sky_cmd {shlex.quote(f'test -d {d}')}\n"
        f"if [ ! -d {d} ]; then\n"
        f"  echo {shlex.quote(missing)} >&2\n"
        "  exit 1\n"
        "fi\n"
        f'echo "skyward bootstrap: $(find {d} -type f | wc -l) include files in "{d}\n'
        f"printf '%s\\n' {shlex.quote(export)} >> \"$W/env.sh\"\n"
        '. "$W/env.sh"\n'
    )
    return _phase("includes", lines)


def op_phase(op: Op, name: str, index: int) -> str:
    file_name = f"{index:02d}-{UNSAFE_PHASE.sub('_', name)}.sh"
    preamble = (
        "# skyward bootstrap op " + name + "\n"
        "set -Eeuo pipefail\n"
        "__sky_failed=''\n"
        "__sky_on_err() {\n"
        '  if [ -z "$__sky_failed" ]; then\n'
        "    __sky_failed=1\n"
        "    local c=${1//$'\\n'/ }\n"
        "    printf '::skyward-failed-command:%s\\n' \"$c\"\n"
        "  fi\n"
        "}\n"
        "trap '__sky_on_err \"$BASH_COMMAND\"' ERR\n"
    )
    content = preamble + op.script.rstrip("\n") + "\n"
    delimiter = _delimiter("SKYWARD_OP", content)
    # A run resumed after a lost connection skips the ops that completed before it: an op need not
    # be safe to run twice, except the one that was cut off, which runs again from its start.
    skipped = f"skyward bootstrap: {name} completed before the connection was lost; not running it again"
    # An op that carries secrets (a volume's keys) is written private and removed once it ran.
    forget = f'rm -f "$W/bootstrap/{file_name}"\n' if op.secrets else ""
    lines = (
        'mkdir -p "$W/bootstrap"\n'
        f'rm -f "$W/bootstrap/{file_name}"\n'
        f"(umask 077 && cat > \"$W/bootstrap/{file_name}\" <<'{delimiter}'\n{content}{delimiter}\n)\n"
        f'if [ "${{{RESUME}:-}}" = 1 ] && [ -e "$W/bootstrap/{file_name}.done" ]; then\n'
        f"  echo {shlex.quote(skipped)}\n"
        "else\n"
        + _indent(_run(f'bash "$W/bootstrap/{file_name}"', f"bash $W/bootstrap/{file_name}"))
        + f'  : > "$W/bootstrap/{file_name}.done"\n'
        "fi\n"
        + forget
    )
    return _phase(name, lines)


# --- helpers --------------------------------------------------------------------------------------


def _indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def _delimiter(prefix: str, content: str) -> str:
    """A heredoc terminator that cannot occur in `content` as a line of its own."""
    digest = hashlib.sha256(content.encode()).hexdigest()[:12].upper()
    delimiter = f"{prefix}_{digest}"
    lines = set(content.splitlines())
    while delimiter in lines:
        delimiter += "_"
    return delimiter
