"""What the bootstrap installs of skyward itself on a node, and its `skyward` phase.

The distributions come from one of three sources (`wheels.resolve_source`): the client's own
wheels ("local", uploaded), PyPI at the client's versions, or github. skyward-core installs with
its dependencies; the sibling distributions (providers, plugins) without theirs, since those are
client-side SDKs. Where the image has `Image.pip`, the `pip` phase installs them in its own uv run
(`SkywardInstalls.joins_pip`), and the `skyward` phase only says so.
"""

from __future__ import annotations

import shlex
from typing import Any

import attrs

from skyward.bootstrap.phases import _phase, _run, _uv_install, normalize, requirement_name

__all__ = ["GITHUB_URL", "SkywardInstalls", "skyward_installs", "skyward_phase"]

#: Where the "github" source installs from.
GITHUB_URL = "https://github.com/gabfssilva/skyward"

@attrs.frozen
class SkywardInstalls:
    """What the `skyward` phase installs: skyward-core with its dependencies (`with_deps`), the
    sibling distributions without theirs (`no_deps`: plugin code the worker unpickles; their own
    dependencies, boto3 or vastai-sdk, are client-side SDKs), and the local wheels to reinstall
    whatever their version says (`reinstall`: local wheels keep their version across edits)."""

    source: str
    with_deps: tuple[str, ...]
    no_deps: tuple[str, ...]
    reinstall: tuple[str, ...]

    def flags(self, group: tuple[str, ...]) -> str:
        return "".join(f" --reinstall-package {n}" for n in self.reinstall if _has_wheel(list(group), n))

    @property
    def joins_pip(self) -> bool:
        """Whether skyward's distributions install in one resolve, with `Image.pip` where there is
        one: one uv run and one index round instead of three. Not from github: that needs git,
        which the skyward phase checks first."""
        return self.source != "github" and bool(self.with_deps)

    @property
    def bare_names(self) -> tuple[str, ...]:
        """The siblings' distribution names: they install without their dependencies."""
        names = (_wheel_name(r) if r.endswith(".whl") else requirement_name(r) for r in self.no_deps)
        return tuple(name for name in names if name)


def skyward_installs(image: Any, wheels: tuple[str, ...]) -> SkywardInstalls:
    from skyward.bootstrap.wheels import installed_skyward, resolve_source

    source = resolve_source(image)
    dists = installed_skyward()  # {normalized name: version}, skyward-core first
    core_version = dists.get("skyward-core", _core_version())
    siblings = {name: version for name, version in dists.items() if name != "skyward-core"}
    if source == "local":
        by_name = {_wheel_name(w): w for w in wheels}
        with_deps = [by_name.get("skyward-core", f"skyward-core=={core_version}")]
        no_deps = [by_name.get(name, f"{name}=={version}") for name, version in siblings.items()]
        reinstall = tuple(n for n in ("skyward-core", *siblings) if n in by_name)
    elif source == "github":
        ref = "main" if not _released(core_version) else f"v{core_version}"
        with_deps = [f"skyward-core @ git+{GITHUB_URL}@{ref}#subdirectory=skyward-core"]
        no_deps = [f"{name} @ git+{GITHUB_URL}@{ref}#subdirectory={name}" for name in siblings]
        reinstall = ()
    else:  # pypi
        with_deps = [f"skyward-core=={core_version}"]
        no_deps = [f"{name}=={version}" for name, version in siblings.items()]
        reinstall = ()
    return SkywardInstalls(source, tuple(with_deps), tuple(no_deps), reinstall)


def skyward_phase(image: Any, wheels: tuple[str, ...], *, core_in_pip: bool = False) -> str:
    """Installs skyward into the venv (with `core_in_pip`, the `pip` phase did), then unpacks the
    worker's bytecode when the client sent it (`bytecode`). No import check here: the worker's
    start is that check (`skyward._environment_mark`), one interpreter start less on a cold
    pool's critical path."""
    installs = skyward_installs(image, wheels)
    bytecode = _unpack_bytecode(wheels)
    if core_in_pip or not installs.with_deps:
        installed = "echo 'skyward bootstrap: skyward was installed with Image.pip'\n"
        return _phase("skyward", installed + bytecode)
    if installs.joins_pip:  # no Image.pip: skyward's own distributions, in one uv run all the same
        return _phase("skyward", _uv_install((), (), installs) + bytecode)
    install = '"$W/bin/uv" pip install --python "$V/bin/python"'
    shown = "uv pip install --python $W/venv/bin/python"
    no_git = ('skyward bootstrap: Image(skyward_source="github") needs git on the node; '
              'add it with Image(apt=["git"])')
    lines = f"if ! command -v git >/dev/null 2>&1; then\n  echo {shlex.quote(no_git)} >&2\n  exit 1\nfi\n"
    for group, extra in ((installs.with_deps, ""), (installs.no_deps, " --no-deps")):
        if group:
            flags = installs.flags(group) + extra
            quoted = " ".join(shlex.quote(r) for r in group)
            lines += _run(f"{install}{flags} {quoted}", f"{shown}{flags} {quoted}")
    return _phase("skyward", lines + bytecode)


def _unpack_bytecode(wheels: tuple[str, ...]) -> str:
    """Unpacks `bytecode.BUNDLE`, uploaded beside `wheels`, into the venv's site-packages of the
    client's Python version (a node of another version has no such folder and compiles as
    before): only the pycs whose source the venv holds, so that no folder appears where the
    venv has no package (it would import as an empty namespace package)."""
    if not wheels:
        return ""
    from skyward.bootstrap.bytecode import BUNDLE, site_packages

    bundle = shlex.quote(f"{wheels[0].rsplit('/', 1)[0]}/{BUNDLE}")
    site = f'"$V"/{shlex.quote(site_packages())}'
    failed = "skyward bootstrap: the worker's bytecode did not unpack; it compiles its modules itself"
    return (  # in an `if` condition, so that a failure only says so (`set -e` stops nothing)
        f"if [ -f {bundle} ] && [ -d {site} ]; then\n"
        f"  if ! {{ tar -tzf {bundle} 2>/dev/null | while IFS= read -r m; do\n"
        "    f=${m##*/}\n"
        f'    if [ -f {site}/"${{m%/__pycache__/*}}/${{f%%.*}}.py" ]; then printf \'%s\\n\' "$m"; fi\n'
        f"  done > {bundle}.list && {{ [ ! -s {bundle}.list ] ||\n"
        f"    tar -xzf {bundle} -C {site} -T {bundle}.list 2>/dev/null; }}; }}\n"
        f"  then echo {shlex.quote(failed)}; fi\n"
        "fi\n"
    )


# --- helpers --------------------------------------------------------------------------------------


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
