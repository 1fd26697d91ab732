"""Skyward's own distributions on a node: which source to install from, and local wheels to upload.

`resolve_source(image)` turns `Image.skyward_source="auto"` into `"local"` when this client runs
skyward-core from a source checkout (editable or a local directory install) or a version that was
never released (a dev or local version), and into `"pypi"` otherwise.

`local_wheels(dest)` builds a wheel (`pip wheel --no-deps --no-build-isolation`) for every installed
`skyward-*` distribution from its source directory, found through the distribution's
`direct_url.json`. Wheels are cached under `dest` by a digest of the source tree, so repeated pools
(and every node of one pool) reuse them, and an edit to the source gives a new wheel. A
distribution installed from a wheel file that still exists is reused as it is; one installed from
an index has no source here, so it is reported and the bootstrap installs it from PyPI
(`name==version`) instead.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import structlog

__all__ = [
    "installed_skyward",
    "is_release",
    "local_wheels",
    "resolve_source",
    "source_dir",
    "wheel_cache_dir",
]

#: Folders that never go into a wheel and must not change its digest.
_SKIP_DIRS = {
    ".git", "__pycache__", "build", "dist", ".venv", "venv", "node_modules", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".hypothesis",
}
_RELEASE = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?$")
_lock = threading.Lock()


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _skyward_dists() -> dict[str, importlib.metadata.Distribution]:
    """Installed `skyward-*` distributions by normalized name, skyward-core first (first on sys.path wins)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        try:
            name = _normalize(dist.metadata["Name"] or "")
        except KeyError:  # a broken installation without a name
            continue
        if name.startswith("skyward-") and name not in found:
            found[name] = dist
    ordered = dict(sorted(found.items(), key=lambda item: (item[0] != "skyward-core", item[0])))
    return ordered


def installed_skyward() -> dict[str, str]:
    """`{normalized name: version}` of the installed skyward distributions, skyward-core first."""
    return {name: dist.version for name, dist in _skyward_dists().items()}


def is_release(version: str) -> bool:
    """Whether `version` looks like one published to an index (no dev or local segment)."""
    return bool(_RELEASE.match(version))


def _direct_url(dist: importlib.metadata.Distribution) -> dict[str, Any] | None:
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
        return "local"  # running from a bare checkout on sys.path: there is nothing to pin
    if source_dir(core) is not None or _archive(core) is not None or not is_release(core.version):
        return "local"
    return "pypi"


def wheel_cache_dir() -> Path:
    """Where built wheels are kept between pools: `~/.skyward/wheels` (under `$SKYWARD_HOME` when set)."""
    from skyward.logging import skyward_home

    return skyward_home() / "wheels"


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(dirpath) / name


def source_digest(root: Path) -> str:
    """A digest of every file under `root` that can end up in its wheel (paths and contents)."""
    digest = hashlib.blake2b(digest_size=10)
    for path in _walk(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            continue
        digest.update(b"\0")
    return digest.hexdigest()


def _build(name: str, source: Path, target: Path) -> Path | None:
    """Build `source` into a wheel under `target` (atomically); None, logged, when the build fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=target.parent) as tmp:
        command = [
            sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
            "--disable-pip-version-check", "--quiet", "--wheel-dir", tmp, str(source),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        built = sorted(Path(tmp).glob("*.whl"))
        if result.returncode != 0 or not built:
            structlog.get_logger().warning(
                "skyward.wheel_build_failed", distribution=name, source=str(source),
                output=(result.stdout + result.stderr)[-2000:],
            )
            return None
        staged = Path(tmp) / "done"
        staged.mkdir()
        shutil.move(str(built[0]), staged / built[0].name)
        try:
            os.rename(staged, target)
        except OSError:  # another process finished first: its wheel is as good as ours
            if not target.exists():
                raise
    return _only_wheel(target)


def _only_wheel(folder: Path) -> Path | None:
    wheels = sorted(folder.glob("*.whl")) if folder.is_dir() else []
    return wheels[0] if wheels else None


def local_wheels(dest: Path) -> tuple[Path, ...]:
    """Wheels of the installed `skyward-*` distributions that have a local source, built or cached in `dest`.

    A distribution without one (installed from an index) is left out and reported; the bootstrap
    installs it from PyPI at the same version.
    """
    dest = Path(dest)
    log = structlog.get_logger()
    with _lock:
        wheels: dict[str, Path] = {}
        to_build: list[tuple[str, Path, Path]] = []
        for name, dist in _skyward_dists().items():
            source = source_dir(dist)
            if source is not None:
                target = dest / name / source_digest(source)
                cached = _only_wheel(target)
                if cached is not None:
                    wheels[name] = cached
                else:
                    to_build.append((name, source, target))
                continue
            archive = _archive(dist)
            if archive is not None:
                wheels[name] = archive
                continue
            log.info(
                "skyward.wheel_from_pypi", distribution=name, version=dist.version,
                reason="installed from an index: no local source to build; the node installs it from PyPI",
            )
        if to_build:
            with ThreadPoolExecutor(max_workers=min(4, len(to_build))) as pool:
                results = list(pool.map(lambda job: _build(*job), to_build))
            for (name, _, _), wheel in zip(to_build, results, strict=True):
                if wheel is not None:
                    wheels[name] = wheel
        order = list(_skyward_dists())
        return tuple(wheels[name] for name in order if name in wheels)
