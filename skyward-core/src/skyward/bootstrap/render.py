"""Render an `Image` plus plugin `Op`s into the one bash script every provider runs on a node.

The script is identical for every provider (Local(isolated=True), SSH, the clouds): the provider
only decides how to run it (`runner.run_bootstrap`) and where (`workdir`). It prints machine-readable
markers on stdout, which the runner turns into events:

    ::skyward-phase:<name>:start            a phase began
    ::skyward-phase:<name>:done             it finished
    ::skyward-phase:<name>:fail:<exit code> it failed (printed by an EXIT trap, so `exit 1` counts)
    ::skyward-command:<command>             a command the phase is about to run
    ::skyward-failed-command:<command>      inside a plugin op: the command that failed

Phases, in order: `uv` (find uv, else `pip install --target <workdir>/.uv uv` from the package
registry), `venv` (`uv venv` at `<workdir>/venv`, reused when it was made for the same Python),
`apt` (only when `Image.apt`), `pip` (only when `Image.pip`), `env` (writes `<workdir>/env.sh`),
`includes` (only with an `includes_dir`), `skyward` (installs skyward into the venv), then one phase
per plugin op, named after `Op.name`, in plugin order.

Scoped indexes (`PipIndex`): uv applies `[tool.uv.sources]` pins and `explicit = true` indexes when
it installs `-r pyproject.toml`, so with indexes the pip phase writes `<workdir>/requirements/
pyproject.toml` (mode 600: an index URL may hold credentials) naming `Image.pip` as dependencies,
each index as an explicit `[[tool.uv.index]]` and each of its packages pinned to it. A routed
package and nothing else comes from its index; its dependencies and every other package come from
the default index (PyPI). uv applies sources to the requirements named there only, so an index
package that arrives merely as a dependency of another comes from PyPI: list it in `Image.pip` to
route it. Without indexes the phase is one plain
`uv pip install`.

`env.sh` is POSIX sh (the worker launch may source it from `/bin/sh`): the image's `env` with every
value single-quoted, the values of `shell_vars` (each snippet runs once, in the env phase, and its
stdout becomes the value, so `{"HOST": "hostname"}` gives HOST its output), then skyward's own
variables: `SKYWARD_WORKDIR`, `SKYWARD_VENV`, `VIRTUAL_ENV`, `PATH` (the venv's bin and uv first)
and `PYTHONPATH` (the includes directory). The file is mode 600: image env values may be tokens.

A run cut off by a lost connection is resumed on a new one with `SKYWARD_BOOTSTRAP_RESUME=1`:
the image phases run again (each is idempotent), and each plugin op that completed (it leaves
`<workdir>/bootstrap/<op file>.done`) is skipped; a run without the variable clears those marks.

The worker is not started here. A provider starts it after the bootstrap with
`Script.launch_line(setup.launch)`: `. <workdir>/env.sh && exec <launch command>`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from skyward.bootstrap.ops import Op, as_ops

__all__ = ["IMAGE_PHASES", "Script", "phase_names", "render_script"]

#: The image phases, in the order they run; plugin ops follow, one phase each.
IMAGE_PHASES: tuple[str, ...] = ("uv", "venv", "apt", "pip", "env", "includes", "skyward")

#: Where the "github" source installs from.
GITHUB_URL = "https://github.com/gabfssilva/skyward"

#: Set to 1 by the runner (`run_bootstrap(resume=True)`) when this run resumes one a lost connection cut off.
RESUME = "SKYWARD_BOOTSTRAP_RESUME"

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_UNSAFE_PHASE = re.compile(r"[^A-Za-z0-9._-]+")


@attrs.frozen
class Script:
    """A rendered bootstrap: the bash text and the paths it creates on the node."""

    text: str
    python_bin: str
    venv_dir: str
    workdir: str

    @property
    def env_file(self) -> str:
        return f"{self.workdir}/env.sh"

    def launch_line(self, launch: Any) -> str:
        """The shell line that starts the worker: the node's env, then `exec` of the launch command.

        `launch` is a `LaunchCommand` (anything with `render()`) or an already rendered string.
        """
        command = launch.render() if hasattr(launch, "render") else str(launch)
        return f". {shlex.quote(self.env_file)} && exec {command}"


def render_script(
    image: Any,
    ops: Iterable[Op | str] = (),
    *,
    workdir: str,
    python: str | None = None,
    wheels: tuple[str, ...] = (),
    includes_dir: str | None = None,
    system_site_packages: bool = False,
) -> Script:
    """The bootstrap script for `image` followed by the plugin `ops`, rooted at `workdir` on the node.

    `python`: None uses `image.python_version()`; `"auto"` the client's major.minor; a version
    (`"3.12"`) asks uv for that interpreter; a path (`"/usr/bin/python3.11"`) uses that one.
    `wheels` are paths *on the node* of skyward wheels the provider uploaded (source "local");
    `includes_dir` is where the provider put `Image.includes` (the script checks it and adds it to
    PYTHONPATH).
    """
    if not workdir.startswith("/"):
        raise ValueError(
            f"render_script(workdir={workdir!r}): the workdir must be an absolute path on the node "
            "(the worker's python path is derived from it); resolve ~ or $HOME before rendering"
        )
    workdir = workdir.rstrip("/") or "/"
    venv = f"{workdir}/venv"
    python_spec = _python_spec(image, python)
    op_list = as_ops(ops)
    names = phase_names(image, op_list, includes_dir=includes_dir)

    body: list[str] = [_setup(workdir)]
    body.append(_uv_phase(python_spec))
    body.append(_venv_phase(python_spec, system_site_packages))
    if image.apt:
        body.append(_apt_phase(tuple(image.apt)))
    if image.pip:
        body.append(_pip_phase(tuple(image.pip), tuple(image.pip_indexes)))
    body.append(_env_phase(image, workdir, venv))
    if includes_dir is not None:
        body.append(_includes_phase(includes_dir))
    body.append(_skyward_phase(image, wheels))
    for index, (op, name) in enumerate(zip(op_list, names[-len(op_list):] if op_list else (), strict=True)):
        body.append(_op_phase(op, name, index))

    text = _PRELUDE + "__sky_main() {\n" + "\n".join(body) + "}\n\n__sky_main \"$@\" < /dev/null\n"
    return Script(text=text, python_bin=f"{venv}/bin/python", venv_dir=venv, workdir=workdir)


def phase_names(image: Any, ops: Sequence[Op], *, includes_dir: str | None = None) -> tuple[str, ...]:
    """Every phase the script for (`image`, `ops`) runs, in order; op names made unique and marker-safe."""
    names = ["uv", "venv"]
    if image.apt:
        names.append("apt")
    if image.pip:
        names.append("pip")
    names.append("env")
    if includes_dir is not None:
        names.append("includes")
    names.append("skyward")
    used = set(IMAGE_PHASES) | {"timeout", "bootstrap"}
    for op in ops:
        base = _UNSAFE_PHASE.sub("-", op.name).strip("-") or "op"
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        names.append(name)
    return tuple(names)


# --- the pieces -----------------------------------------------------------------------------------

_PRELUDE = r"""#!/usr/bin/env bash
# Skyward node bootstrap, rendered by skyward.bootstrap.render. Markers on stdout:
#   ::skyward-phase:<name>:start|done|fail:<rc>   ::skyward-command:<cmd>   ::skyward-failed-command:<cmd>
set -euo pipefail
__sky_phase=""
__sky_on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$__sky_phase" ]; then
    printf '::skyward-phase:%s:fail:%s\n' "$__sky_phase" "$rc"
  fi
}
trap __sky_on_exit EXIT
__sky_begin() { __sky_phase=$1; printf '::skyward-phase:%s:start\n' "$1"; }
__sky_done() { printf '::skyward-phase:%s:done\n' "$__sky_phase"; __sky_phase=""; }
__sky_cmd() { local c=${1//'$W'/$W}; printf '::skyward-command:%s\n' "${c//$'\n'/ }"; }
__sky_squote() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }

"""


def _setup(workdir: str) -> str:
    w = shlex.quote(workdir)
    return (
        f"W={w}\n"
        'mkdir -p "$W" "$W/bin"\n'
        'chmod 700 "$W"\n'
        'cd "$W"\n'
        # Which ops completed counts only for the run that resumes this one (see _op_phase).
        f'if [ "${{{RESUME}:-}}" != 1 ]; then rm -f "$W"/bootstrap/*.done; fi\n'
    )


def _run(command: str, shown: str | None = None) -> str:
    """A command line preceded by its `::skyward-command:` marker (`shown` when the text differs)."""
    return f"__sky_cmd {shlex.quote(shown if shown is not None else command)}\n{command}\n"


def _phase(name: str, lines: str) -> str:
    return f"__sky_begin {shlex.quote(name)}\n{lines}__sky_done\n"


def _python_spec(image: Any, python: str | None) -> str:
    if python is None:
        return str(image.python_version())
    if python == "auto":
        return f"{sys.version_info.major}.{sys.version_info.minor}"
    return python


def _bootstrap_python(python_spec: str) -> str:
    """The interpreter that installs uv when the node has none: the given one, else python3."""
    return python_spec if "/" in python_spec else "python3"


def _uv_phase(python_spec: str) -> str:
    bootstrap_python = _bootstrap_python(python_spec)
    py = shlex.quote(bootstrap_python)
    install = (
        f'PIP_BREAK_SYSTEM_PACKAGES=1 {py} -m pip install --disable-pip-version-check --target "$W/.uv" uv'
    )
    no_pip = (
        f"skyward bootstrap: uv is not on PATH and {bootstrap_python} has no pip to install it with; "
        "install uv (https://docs.astral.sh/uv/) or python3-pip on this host"
    )
    lines = (
        "if command -v uv >/dev/null 2>&1; then\n"
        '  __sky_uv=$(command -v uv)\n'
        'elif [ -x "${HOME:-/nonexistent}/.local/bin/uv" ]; then\n'
        '  __sky_uv="$HOME/.local/bin/uv"\n'
        'elif [ -x "$W/.uv/bin/uv" ]; then\n'
        '  __sky_uv="$W/.uv/bin/uv"\n'
        "else\n"
        f"  if ! {py} -m pip --version >/dev/null 2>&1; then\n"
        f"    echo {shlex.quote(no_pip)} >&2\n"
        "    exit 1\n"
        "  fi\n"
        + _indent(_run(install, f"{bootstrap_python} -m pip install --target $W/.uv uv"))
        + '  __sky_uv="$W/.uv/bin/uv"\n'
        "fi\n"
        'ln -sf "$__sky_uv" "$W/bin/uv"\n'
        + _run('"$W/bin/uv" --version', "uv --version")
    )
    return _phase("uv", lines)


def _venv_phase(python_spec: str, system_site_packages: bool = False) -> str:
    # `system_site_packages` (SSH(python=...)): the venv also sees the host interpreter's packages.
    flag = " --system-site-packages" if system_site_packages else ""
    spec = shlex.quote(python_spec + (" +system-site-packages" if system_site_packages else ""))
    lines = (
        'V="$W/venv"\n'
        f'if [ -x "$V/bin/python" ] && [ "$(cat "$V/.skyward-python" 2>/dev/null || true)" = {spec} ]; then\n'
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
    return (
        f"if command -v {py} >/dev/null 2>&1; then\n"
        f'  __sky_cmd {shlex.quote(f"add the site-packages of {python_spec} to $W/venv if it is a venv")}\n'
        f'  {py} -c {shlex.quote(_HOST_SITE_PTH)} "$({purelib})/_skyward_host_venv.pth"\n'
        "fi\n"
    )


def _apt_phase(packages: tuple[str, ...]) -> str:
    quoted = " ".join(shlex.quote(p) for p in packages)
    install = (
        f"$__sky_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {quoted}"
    )
    lines = (
        'if [ "$(id -u)" -eq 0 ]; then\n'
        '  __sky_sudo=""\n'
        "elif command -v sudo >/dev/null 2>&1; then\n"
        '  __sky_sudo="sudo -n"\n'
        "else\n"
        '  echo "skyward bootstrap: Image.apt needs root, and this user is not root and has no sudo" >&2\n'
        "  exit 1\n"
        "fi\n"
        + _run("$__sky_sudo apt-get update", "apt-get update")
        + _run(install, f"apt-get install -y --no-install-recommends {quoted}")
    )
    return _phase("apt", lines)


def requirement_name(requirement: str) -> str | None:
    """The normalized distribution name of a PEP 508 requirement; None for a URL or a path."""
    text = requirement.strip()
    if "://" in text.split("@", 1)[0] or text.startswith((".", "/", "~")):
        return None
    match = _NAME.match(text)
    return normalize(match.group(1)) if match else None


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip_phase(packages: tuple[str, ...], indexes: tuple[Any, ...]) -> str:
    install = '"$W/bin/uv" pip install --python "$V/bin/python"'
    shown = "uv pip install --python $W/venv/bin/python"
    if not indexes:
        quoted = " ".join(shlex.quote(p) for p in packages)
        return _phase("pip", _run(f"{install} {quoted}", f"{shown} {quoted}"))
    named = [p for p in packages if requirement_name(p) is not None]
    other = [p for p in packages if requirement_name(p) is None]
    toml = _requirements_toml(named, indexes)
    delimiter = _delimiter("SKYWARD_REQUIREMENTS", toml)
    extra = "".join(f" {shlex.quote(p)}" for p in other)
    # The index URLs may carry credentials (`https://user:password@host`), which uv reads from
    # here: the file is private to the node's user, like env.sh (`rm` first: an older one keeps its mode).
    lines = (
        'mkdir -p "$W/requirements"\n'
        'rm -f "$W/requirements/pyproject.toml"\n'
        f"(umask 077 && cat > \"$W/requirements/pyproject.toml\" <<'{delimiter}'\n{toml}{delimiter}\n)\n"
        + _run(
            f'{install} -r "$W/requirements/pyproject.toml"{extra}',
            f"{shown} -r $W/requirements/pyproject.toml{extra}",
        )
    )
    return _phase("pip", lines)


def _requirements_toml(packages: list[str], indexes: tuple[Any, ...]) -> str:
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
    return "\n".join(lines) + "\n"


def _env_phase(image: Any, workdir: str, venv: str) -> str:
    static = [
        "# Skyward node environment (POSIX sh): sourced by later bootstrap phases and by the worker launch.",
        "export PYTHONUNBUFFERED=1",
    ]
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


def _includes_phase(includes_dir: str) -> str:
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


def _skyward_phase(image: Any, wheels: tuple[str, ...]) -> str:
    from skyward.bootstrap.wheels import installed_skyward, resolve_source

    source = resolve_source(image)
    dists = installed_skyward()  # {normalized name: version}, skyward-core first
    core_version = dists.get("skyward-core", _core_version())
    siblings = {name: version for name, version in dists.items() if name != "skyward-core"}
    install = '"$W/bin/uv" pip install --python "$V/bin/python"'
    shown = "uv pip install --python $W/venv/bin/python"
    with_deps: list[str] = []  # skyward-core, with its dependencies
    no_deps: list[str] = []  # the siblings: plugin code the worker unpickles; their own dependencies
    # (boto3, vastai-sdk) are client-side SDKs, so they are installed without dependencies
    reinstall: set[str] = set()  # local wheels keep their version across edits: always reinstall them
    if source == "local":
        by_name = {_wheel_name(w): w for w in wheels}
        with_deps.append(by_name.get("skyward-core", f"skyward-core=={core_version}"))
        no_deps += [by_name.get(name, f"{name}=={version}") for name, version in siblings.items()]
        reinstall = set(by_name)
    elif source == "github":
        ref = "main" if not _released(core_version) else f"v{core_version}"
        with_deps.append(f"skyward-core @ git+{GITHUB_URL}@{ref}#subdirectory=skyward-core")
        no_deps += [f"{name} @ git+{GITHUB_URL}@{ref}#subdirectory={name}" for name in siblings]
    else:  # pypi
        with_deps.append(f"skyward-core=={core_version}")
        no_deps += [f"{name}=={version}" for name, version in siblings.items()]
    lines = ""
    if source == "github":
        no_git = (
            'skyward bootstrap: Image(skyward_source="github") needs git on the node; '
            'add it with Image(apt=["git"])'
        )
        lines += (
            "if ! command -v git >/dev/null 2>&1; then\n"
            f"  echo {shlex.quote(no_git)} >&2\n  exit 1\nfi\n"
        )
    for group, extra in ((with_deps, ""), (no_deps, " --no-deps")):
        if not group:
            continue
        names = [n for n in ("skyward-core", *siblings) if n in reinstall and _has_wheel(group, n)]
        flags = "".join(f" --reinstall-package {n}" for n in names) + extra
        quoted = " ".join(shlex.quote(r) for r in group)
        lines += _run(f"{install}{flags} {quoted}", f"{shown}{flags} {quoted}")
    lines += _run('"$V/bin/python" -c "import skyward.worker"', "python -c 'import skyward.worker'")
    return _phase("skyward", lines)


def _op_phase(op: Op, name: str, index: int) -> str:
    file_name = f"{index:02d}-{_UNSAFE_PHASE.sub('_', name)}.sh"
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
    lines = (
        'mkdir -p "$W/bootstrap"\n'
        f"cat > \"$W/bootstrap/{file_name}\" <<'{delimiter}'\n{content}{delimiter}\n"
        f'if [ "${{{RESUME}:-}}" = 1 ] && [ -e "$W/bootstrap/{file_name}.done" ]; then\n'
        f"  echo {shlex.quote(skipped)}\n"
        "else\n"
        + _indent(_run(f'bash "$W/bootstrap/{file_name}"', f"bash $W/bootstrap/{file_name}"))
        + f'  : > "$W/bootstrap/{file_name}.done"\n'
        "fi\n"
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


def _wheel_name(path: str) -> str:
    """The normalized distribution name of a wheel file path (`.../skyward_core-0.1.0-py3-none-any.whl`)."""
    return normalize(path.rsplit("/", 1)[-1].split("-", 1)[0])


def _has_wheel(group: list[str], name: str) -> bool:
    """Whether `group` holds a wheel file of distribution `name`."""
    return any(r.endswith(".whl") and _wheel_name(r) == name for r in group)


def _core_version() -> str:
    from skyward._version import __version__

    return __version__


def _released(version: str) -> bool:
    from skyward.bootstrap.wheels import is_release

    return is_release(version)
