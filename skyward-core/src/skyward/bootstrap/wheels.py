"""Skyward's own distributions on a node: which source to install from, and local wheels to upload.

`resolve_source(image)` turns `Image.skyward_source="auto"` into `"pypi"` when this client's
skyward-core was installed from a package index at a released version (the node installs the same
`name==version` there), and into `"local"` for every other install: an editable checkout,
`pip install ./skyward-core`, a wheel file, a dev or local version.

`local_wheels(dest)` gives a wheel of every installed `skyward-*` distribution, without a build
backend in the client's environment (they are pure Python; see `wheelmaker`):

- installed from a wheel file that still exists: that file, as it is;
- an editable install: assembled from its source tree (the packages its pyproject names), with
  the METADATA and entry points of the installed dist-info;
- any other install: assembled from its installed files, as its RECORD lists them, so a
  `pip install ./skyward-core` ships even when the source is gone.

Assembled wheels are cached under `dest` by a digest of their bytes (they are reproducible), so
repeated pools and every node of a pool upload the same file, and an edit gives a new one. A
distribution none of these can give is installed from PyPI when it came from an index at a released
version; otherwise it cannot reach a node, and `local_wheels` raises `ConfigurationError` naming it
and the fix. The pool calls `prepare_wheels` before it asks for any machine, so that error comes
first, not after machines were paid for.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import tempfile
import threading
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import attrs
import structlog

from skyward.bootstrap.wheelmaker import normalize, wheel_bytes, wheel_filename
from skyward.errors import ConfigurationError

__all__ = [
    "Shipment",
    "installed_skyward",
    "is_release",
    "local_wheels",
    "prepare_wheels",
    "resolve_source",
    "shipments",
    "source_dir",
    "wheel_cache_dir",
]

#: Folders of a source tree that never go into a wheel.
_SKIP_DIRS = {
    ".git", "__pycache__", "build", "dist", ".venv", "venv", "node_modules", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".hypothesis",
}
_SKIP_SUFFIXES = (".pyc", ".pyo")
_RELEASE = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?$")
_lock = threading.Lock()

#: How a distribution reaches the nodes (`Shipment.how`).
WHEEL_FILE, SOURCE, INSTALLED, PYPI, NONE = "wheel file", "source tree", "installed files", "pypi", "none"


@attrs.frozen
class Shipment:
    """How one installed `skyward-*` distribution reaches the nodes, decided without building anything.

    `how` is `WHEEL_FILE` (`path` is the wheel), `SOURCE` (`path` is the source tree), `INSTALLED`
    (its RECORD's files), `PYPI` (`name==version` from the index) or `NONE` (`reason` says why).
    """

    name: str
    version: str
    how: str
    path: Path | None = None
    reason: str = ""

    @property
    def local(self) -> bool:
        """Whether a wheel of it is uploaded (rather than installed from PyPI, or not at all)."""
        return self.how in (WHEEL_FILE, SOURCE, INSTALLED)

    @property
    def wheel_name(self) -> str:
        """The file name its wheel has on the node."""
        if self.how == WHEEL_FILE and self.path is not None:
            return self.path.name
        return wheel_filename(self.name, self.version)


#: What a file parsed to, by path, while its modification time and size stay the same: every pool
#: start reads the installed distributions' METADATA and their sources' pyproject.toml again
#: (about 20 ms of a warm start's critical path), where one `stat` each tells they did not change.
_parsed: dict[Path, tuple[tuple[int, int], Any]] = {}


def _by_stat(path: Path, parse: Any) -> Any:
    """`parse(path)`, remembered until the file's mtime or size changes; OSError as `parse` raises it."""
    stat = path.stat()
    key = (stat.st_mtime_ns, stat.st_size)
    known = _parsed.get(path)
    if known is not None and known[0] == key:
        return known[1]
    value = parse(path)
    _parsed[path] = (key, value)
    return value


def _name_version(dist: importlib.metadata.Distribution) -> tuple[str, str]:
    """(Name, Version) of `dist` from its METADATA, parsed once while the file is unchanged."""
    folder = getattr(dist, "_path", None)  # a PathDistribution's dist-info folder
    if isinstance(folder, Path):
        with contextlib.suppress(OSError):
            return _by_stat(folder / "METADATA", lambda _: (dist.metadata["Name"] or "", dist.version))
    return dist.metadata["Name"] or "", dist.version


def _skyward_dists() -> dict[str, importlib.metadata.Distribution]:
    """Installed `skyward-*` distributions by normalized name, skyward-core first (first on sys.path wins)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        # The dist-info folder's name says the project's (`skyward_core-0.1.0.dist-info`): reading
        # it costs nothing, where parsing every installed METADATA costs ~1 ms each (hundreds).
        folder = normalize(getattr(dist, "_normalized_name", None) or "")
        if folder and not folder.startswith("skyward-"):
            continue
        try:
            name = normalize(_name_version(dist)[0])
        except KeyError:  # a broken installation without a name
            continue
        if name.startswith("skyward-") and name not in found:
            found[name] = dist
    return dict(sorted(found.items(), key=lambda item: (item[0] != "skyward-core", item[0])))


def installed_skyward() -> dict[str, str]:
    """`{normalized name: version}` of the installed skyward distributions, skyward-core first."""
    return {name: _name_version(dist)[1] for name, dist in _skyward_dists().items()}


def is_release(version: str) -> bool:
    """Whether `version` looks like one published to an index (no dev or local segment)."""
    return bool(_RELEASE.match(version))


def _direct_url(dist: importlib.metadata.Distribution) -> dict[str, Any] | None:
    """PEP 610's record of a direct install (a folder, a wheel file, a URL); None for an index install."""
    text = dist.read_text("direct_url.json")
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _file_path(url: str) -> Path | None:
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def _editable(dist: importlib.metadata.Distribution) -> bool:
    data = _direct_url(dist) or {}
    info = data.get("dir_info")
    return isinstance(info, dict) and bool(info.get("editable"))


def source_dir(dist: importlib.metadata.Distribution) -> Path | None:
    """The source tree `dist` was installed from (editable or `pip install ./dir`), if it still exists."""
    data = _direct_url(dist)
    if data is None or "dir_info" not in data:
        return None
    path = _file_path(str(data.get("url", "")))
    return path if path is not None and (path / "pyproject.toml").exists() else None


def _archive(dist: importlib.metadata.Distribution) -> Path | None:
    data = _direct_url(dist)
    if data is None or "archive_info" not in data:
        return None
    path = _file_path(str(data.get("url", "")))
    return path if path is not None and path.suffix == ".whl" and path.is_file() else None


def resolve_source(image: Any) -> str:
    """`Image.skyward_source` with "auto" resolved against this client's skyward-core install."""
    source = str(getattr(image, "skyward_source", "auto"))
    if source != "auto":
        return source
    try:
        core = importlib.metadata.distribution("skyward-core")
    except importlib.metadata.PackageNotFoundError:
        return "local"  # running from a bare checkout on sys.path: `local_wheels` says what to do
    if _direct_url(core) is None and is_release(core.version):
        return "pypi"  # installed from an index: the node installs the same release there
    return "local"


def wheel_cache_dir() -> Path:
    """Where assembled wheels are kept between pools: `~/.skyward/wheels` (under
    `$SKYWARD_CACHE_DIR`, else `$SKYWARD_HOME`, when set)."""
    from skyward.home import skyward_cache

    return skyward_cache() / "wheels"


# -- deciding how each distribution ships ----------------------------------------------------------------


def _packages(source: Path) -> list[Path]:
    """The package folders a wheel of `source` holds: hatch's `[tool.hatch.build.targets.wheel]
    packages` (every distribution here lists `src/<pkg>`), else each `src/<pkg>/` with an `__init__.py`."""
    try:
        listed = _by_stat(source / "pyproject.toml", _listed_packages)
    except OSError:
        listed = None
    if listed:
        return [source / package for package in listed]
    return sorted(init.parent for init in (source / "src").glob("*/__init__.py"))


def _listed_packages(pyproject: Path) -> tuple[str, ...] | None:
    """The wheel's `packages` a pyproject.toml lists for hatch, None when it lists none."""
    try:
        config = tomllib.loads(pyproject.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    wheel = config.get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {})
    listed = wheel.get("packages") if isinstance(wheel, dict) else None
    return tuple(str(package) for package in listed) if isinstance(listed, list) and listed else None


def _installed_files(dist: importlib.metadata.Distribution) -> tuple[list[Any], list[Any]]:
    """(package files, dist-info files) of `dist`'s RECORD, without bytecode or files outside site-packages
    (console scripts: the installer on the node writes them again from entry_points.txt)."""
    package: list[Any] = []
    info: list[Any] = []
    for file in dist.files or ():
        parts = file.parts
        if not parts or ".." in parts or file.is_absolute() or "__pycache__" in parts:
            continue
        if str(file).endswith(_SKIP_SUFFIXES):
            continue
        (info if parts[0].endswith(".dist-info") else package).append(file)
    return package, info


def _ship(name: str, dist: importlib.metadata.Distribution) -> Shipment:
    version = _name_version(dist)[1]
    archive = _archive(dist)
    if archive is not None:
        return Shipment(name, version, WHEEL_FILE, archive)
    reason = ""
    if _editable(dist):
        source = source_dir(dist)
        if source is not None:
            missing = [p for p in _packages(source) if not p.exists()]
            if not missing:
                return Shipment(name, version, SOURCE, source)
            reason = f"its source tree {source} has no {', '.join(str(p) for p in missing)}"
        else:
            url = (_direct_url(dist) or {}).get("url", "?")
            reason = f"it is an editable install of {url}, which no longer holds a pyproject.toml"
    else:
        package, _ = _installed_files(dist)
        absent = [f for f in package if not Path(dist.locate_file(f)).is_file()]
        if dist.files is None:
            reason = "its installation lists no files (no RECORD)"
        elif not any(str(f).endswith(".py") for f in package):
            reason = "its RECORD lists no Python module"
        elif absent:
            reason = f"{len(absent)} of its installed files are missing, e.g. {dist.locate_file(absent[0])}"
        else:
            return Shipment(name, version, INSTALLED)
    if _direct_url(dist) is None and is_release(version):
        return Shipment(name, version, PYPI, reason=f"{reason}; it came from a package index")
    return Shipment(name, version, NONE, reason=reason)


def shipments() -> tuple[Shipment, ...]:
    """How each installed `skyward-*` distribution reaches the nodes (source "local"), skyward-core first.

    Without a skyward-core distribution (skyward imported from a bare checkout on sys.path),
    skyward-core is a `NONE` shipment: nothing says its version or dependencies.
    """
    dists = _skyward_dists()
    found = [_ship(name, dist) for name, dist in dists.items()]
    if "skyward-core" not in dists:
        from skyward._version import __version__

        where = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        reason = f"it is not installed (skyward is imported from {where} on sys.path)"
        found.insert(0, Shipment("skyward-core", __version__, NONE, reason=reason))
    return tuple(found)


def _cannot_ship(problems: Iterable[Shipment]) -> ConfigurationError:
    lines = [f"- {s.name} {s.version}: {s.reason}" for s in problems]
    return ConfigurationError(
        "Skyward cannot ship itself to the nodes; the bootstrap installs this client's skyward "
        "distributions there, and these cannot be packed into a wheel here:\n" + "\n".join(lines) + "\n"
        "Install them so their files are on this machine: `pip install -e ./skyward-core` or "
        "`pip install ./skyward-core` from a checkout, or `pip install` a skyward-core wheel file "
        "(the same for each distribution named); or use a released version from the package index "
        'with Image(skyward_source="pypi").'
    )


# -- assembling the wheels -------------------------------------------------------------------------------


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if not name.endswith(_SKIP_SUFFIXES):
                yield Path(dirpath) / name


def _metadata(dist: importlib.metadata.Distribution, info_files: list[Any]) -> dict[str, bytes]:
    """The installed dist-info's files (METADATA, entry_points.txt, licenses/...) by name inside it."""
    found = {"/".join(f.parts[1:]): Path(dist.locate_file(f)).read_bytes() for f in info_files}
    if "METADATA" not in found:  # a RECORD that does not list it: read it as importlib.metadata does
        found["METADATA"] = (dist.read_text("METADATA") or "").encode()
        entry_points = dist.read_text("entry_points.txt")
        if entry_points:
            found["entry_points.txt"] = entry_points.encode()
    return found


def _wheel_files(shipment: Shipment, dist: importlib.metadata.Distribution) -> dict[str, bytes]:
    if shipment.how == SOURCE:
        assert shipment.path is not None
        files: dict[str, bytes] = {}
        for package in _packages(shipment.path):
            if package.is_file():
                files[package.name] = package.read_bytes()
                continue
            for path in _walk(package):
                files[f"{package.name}/{path.relative_to(package).as_posix()}"] = path.read_bytes()
        return files
    package_files, _ = _installed_files(dist)
    return {"/".join(f.parts): Path(dist.locate_file(f)).read_bytes() for f in package_files}


def _source_paths(shipment: Shipment, dist: importlib.metadata.Distribution) -> list[Path]:
    """Every file `_wheel_files` and `_metadata` read for `shipment`, without reading them."""
    package_files, info_files = _installed_files(dist)
    paths = [Path(dist.locate_file(f)) for f in info_files]
    if shipment.how == SOURCE:
        assert shipment.path is not None
        for package in _packages(shipment.path):
            paths += [package] if package.is_file() else list(_walk(package))
    else:
        paths += [Path(dist.locate_file(f)) for f in package_files]
    return paths


def _fingerprint(shipment: Shipment, dist: importlib.metadata.Distribution) -> str | None:
    """A digest of the name, size and modification time of every file the wheel is made of: what a
    client can check in a millisecond, where assembling the wheel to learn its digest takes a zip
    of every file (tens of milliseconds per distribution, on every pool start). None when a file
    cannot be looked at (the wheel is then assembled)."""
    h = hashlib.blake2b(f"{shipment.name}\0{shipment.version}\0{shipment.how}".encode(), digest_size=12)
    try:
        for path in _source_paths(shipment, dist):
            stat = path.stat()
            h.update(f"\0{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    except OSError:
        return None
    return h.hexdigest()


def _assemble(shipment: Shipment, dist: importlib.metadata.Distribution, dest: Path) -> Path:
    """The wheel of `shipment`, from `dest/<name>/<digest>/` when these bytes were assembled before.

    `dest/<name>/by-stat/<fingerprint>` remembers which digest the files as they are now gave, so an
    unchanged distribution is found without assembling it again."""
    fingerprint = _fingerprint(shipment, dist)
    known = dest / shipment.name / "by-stat" / fingerprint if fingerprint else None
    if known is not None:
        with contextlib.suppress(OSError):
            cached = dest / shipment.name / known.read_text().strip() / shipment.wheel_name
            if cached.is_file():
                return cached
    _, info_files = _installed_files(dist)
    files, metadata = _wheel_files(shipment, dist), _metadata(dist, info_files)
    data = wheel_bytes(shipment.name, shipment.version, files, metadata)
    digest = hashlib.blake2b(data, digest_size=10).hexdigest()
    folder = dest / shipment.name / digest
    target = folder / shipment.wheel_name
    if target.is_file():
        _remember(known, digest)
        return target
    folder.mkdir(parents=True, exist_ok=True)
    fd, staged = tempfile.mkstemp(prefix=".wheel-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(staged, target)  # atomic: another process writing the same bytes is harmless
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise
    _remember(known, digest)
    return target


def _remember(known: Path | None, digest: str) -> None:
    """Note that the files behind `known` (a fingerprint's file) gave the wheel `digest`."""
    if known is None:
        return
    with contextlib.suppress(OSError):
        known.parent.mkdir(parents=True, exist_ok=True)
        fd, staged = tempfile.mkstemp(prefix=".fp-", dir=known.parent)
        with os.fdopen(fd, "w") as f:
            f.write(digest)
        os.replace(staged, known)


def local_wheels(dest: Path) -> tuple[Path, ...]:
    """Wheels of the installed `skyward-*` distributions, skyward-core first, assembled or cached in `dest`.

    A distribution that only PyPI can give is left out and logged: the bootstrap installs it from
    there at the same version. Raises `ConfigurationError` when one can be given by neither.
    """
    dest = Path(dest)
    log = structlog.get_logger()
    with _lock:
        plan = shipments()
        problems = [s for s in plan if s.how == NONE]
        if problems:
            raise _cannot_ship(problems)
        dists = _skyward_dists()
        wheels: list[Path] = []
        for shipment in plan:
            if shipment.how == WHEEL_FILE:
                assert shipment.path is not None
                wheels.append(shipment.path)
            elif shipment.local:
                wheels.append(_assemble(shipment, dists[shipment.name], dest))
            else:
                log.info(
                    "skyward.wheel_from_pypi", distribution=shipment.name, version=shipment.version,
                    reason=f"{shipment.reason}: the node installs it from PyPI",
                )
        return tuple(wheels)


def prepare_wheels(specs: Iterable[Any]) -> tuple[Path, ...]:
    """Skyward's wheels for the nodes of `specs`, assembled before a pool asks for any machine.

    Only specs whose nodes run the bootstrap with source "local" need them (a plain `sky.Local()`
    runs none). A client whose skyward cannot reach a node fails here, with `ConfigurationError`,
    before anything is provisioned and paid for; the nodes then reuse the cached wheels.
    """
    needed = False
    for spec in specs:
        config = spec.provider
        if not config.bootstraps:
            continue
        if resolve_source(spec.image) == "local":
            needed = True
    if not needed:
        return ()
    wheels = local_wheels(wheel_cache_dir())
    from skyward.bootstrap.bytecode import client_bundle

    client_bundle()  # made now, while the machines come, when this client has none yet
    return wheels
