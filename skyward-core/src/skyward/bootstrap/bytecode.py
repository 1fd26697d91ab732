"""Compiled bytecode for the worker's own imports, shipped beside skyward's wheels.

A cold node installs its packages without bytecode (uv's `--compile-bytecode` compiles every file
it installs, numpy's included: seconds), so the worker's first start compiled every module it
imports, skyward's own and attrs, cloudpickle, pluggy...: a quarter of a second on a small machine,
on the critical path of every cold pool. The client compiles that set once instead, as
checked-hash pycs (PEP 552: valid wherever the source has the same bytes, whatever its time
stamp), into a tar that the bootstrap unpacks into the venv's site-packages after its installs.

It can only save time, never change what runs: a module whose source differs on the node (another
version of attrs) fails the hash check there and is compiled on the node, and a node whose Python
is not the client's version has no site-packages folder of that name, so nothing is unpacked (the
cache tag, `cpython-311`, is also in every file name). The bundle is not part of the warm
environment's key: it adds no content.

Making it takes an interpreter start that imports the worker (to learn its import set) and a
compile of that set, about half a second: `client_bundle` never makes a pool wait for that. A
pool whose bundle is not ready starts without one and the bundle is made in the background for
the next; a ready one is found again by the size and time of each of its sources.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import py_compile
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import structlog

__all__ = ["BUNDLE", "ENTRY_TIME", "WORKER_MODULES", "bytecode_bundle", "client_bundle", "site_packages"]

#: The bundle's name, in the node folder's `wheels` folder.
BUNDLE = "bytecode.tar.gz"
#: How bundles are made: one made otherwise (by another skyward) is made again.
FORMAT = 1
#: Every file's time in the bundle (the same files give the same bytes; a pyc with this time on
#: a node came from the bundle and was not compiled again there).
ENTRY_TIME = 946684800  # 2000-01-01
#: What a worker imports as it starts: the import set the bundle covers.
WORKER_MODULES = ("skyward.worker.__main__", "skyward.task.output", "skyward._keeper")
#: Lists the files of the modules an interpreter holds after importing `sys.argv[1:]`, and its path.
#: (Not those the interpreter's start imported: a `.pth` file's, which the venv may not have.)
_LIST = (
    "import json, sys\n"
    "before = set(sys.modules)\n"
    "for name in sys.argv[1:]:\n"
    "    __import__(name)\n"
    "files = [getattr(m, '__file__', None) for n, m in list(sys.modules.items()) if n not in before]\n"
    "print(json.dumps({'files': [f for f in files if f], 'path': sys.path}))\n"
)

_lock = threading.Lock()
_making: threading.Thread | None = None


def site_packages() -> str:
    """The venv folder the bundle unpacks into, relative to the venv: `lib/python3.11/site-packages`."""
    return f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


def client_bundle(dest: Path | None = None, *, wait: bool = False) -> Path | None:
    """This client's bundle when it is ready, else None, having started to make it in the
    background (`wait`: make it now). Never raises: without a bundle, nodes compile their own."""
    global _making
    folder = dest or _cache_dir()
    with contextlib.suppress(OSError, ValueError):
        found = _current(folder)
        if found is not None:
            return found
    with _lock:
        if _making is None or not _making.is_alive():
            _making = threading.Thread(
                target=_make_quietly, args=(folder,), name="skyward-bytecode", daemon=True
            )
            _making.start()
        making = _making
    if not wait:
        return None
    making.join()
    with contextlib.suppress(OSError, ValueError):
        return _current(folder)
    return None


def bytecode_bundle(dest: Path, modules: Iterable[str] = WORKER_MODULES, path: Iterable[str] = ()) -> Path:
    """Make the bundle for `modules` (imported by this interpreter, with `path` ahead of its own
    search path) in `dest`, and remember its sources there (`manifest.json`); returns its path."""
    sources = _sources(tuple(modules), tuple(path))
    stats = [[str(file), relative, *_stat(file)] for file, relative in sources]
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="skyward-bytecode-") as scratch:
        target = os.path.join(scratch, "module.pyc")
        with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
            for file, relative in sources:
                py_compile.compile(
                    str(file), cfile=target, dfile=relative, doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                )
                data = Path(target).read_bytes()
                entry = tarfile.TarInfo(importlib.util.cache_from_source(relative))
                entry.size, entry.mode, entry.mtime = len(data), 0o644, ENTRY_TIME
                tar.addfile(entry, io.BytesIO(data))
    data = buffer.getvalue()
    name = f"{hashlib.blake2b(data, digest_size=10).hexdigest()}-{BUNDLE}"
    dest.mkdir(parents=True, exist_ok=True)
    bundle = dest / name
    _write(bundle, data)
    manifest = {"format": FORMAT, "python": sys.version, "bundle": name, "sources": stats}
    _write(dest / "manifest.json", json.dumps(manifest).encode())
    for old in dest.glob(f"*-{BUNDLE}"):  # a day old: no pool still stages it
        with contextlib.suppress(OSError):
            if old != bundle and time.time() - old.stat().st_mtime > 86400:
                old.unlink()
    return bundle


def _sources(modules: tuple[str, ...], path: tuple[str, ...]) -> list[tuple[Path, str]]:
    """(file, path inside its search-path folder) of every Python source, outside the standard
    library, that an interpreter holds after importing `modules`."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    listed = subprocess.run(
        [sys.executable, "-c", _LIST, *modules], capture_output=True, text=True, timeout=120, env=env,
        check=True,
    )
    found = json.loads(listed.stdout)
    stdlib = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib")}
    roots = sorted(
        (os.path.realpath(entry) for entry in found["path"] if entry and os.path.isdir(entry)),
        key=len, reverse=True,
    )
    sources: dict[Path, str] = {}
    for name in found["files"]:
        file = os.path.realpath(name)
        if not file.endswith(".py") or not os.path.isfile(file):
            continue
        root = next((r for r in roots if file.startswith(r + os.sep)), None)
        if root is None or root in stdlib:
            continue
        sources[Path(file)] = Path(os.path.relpath(file, root)).as_posix()
    return sorted(sources.items(), key=lambda item: item[1])


def _current(folder: Path) -> Path | None:
    """The bundle `folder` holds for this interpreter, if none of its sources changed since.

    Its sources must be this interpreter's own skyward: two checkouts or venvs on one machine
    share `$SKYWARD_HOME`, and a bundle of the other one's unchanged files would pass the stat
    check while no node's sources match it."""
    manifest = json.loads((folder / "manifest.json").read_text())
    if manifest.get("format") != FORMAT or manifest["python"] != sys.version:
        return None
    own = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "__init__.py"))
    if any(file != own for file, relative, *_ in manifest["sources"] if relative == "skyward/__init__.py"):
        return None
    for file, _, size, mtime in manifest["sources"]:
        if _stat(Path(file)) != (size, mtime):
            return None
    bundle = folder / manifest["bundle"]
    return bundle if bundle.is_file() else None


def _make_quietly(folder: Path) -> None:
    try:
        bytecode_bundle(folder)
    except Exception as exc:  # noqa: BLE001 - an accelerator: the nodes compile their own
        structlog.get_logger().info("skyward.bytecode_not_made", error=str(exc)[:300])


def _stat(file: Path) -> tuple[int, int]:
    stat = file.stat()
    return stat.st_size, stat.st_mtime_ns


def _write(target: Path, data: bytes) -> None:
    fd, staged = tempfile.mkstemp(prefix=".bytecode-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(staged, target)
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise


def _cache_dir() -> Path:
    from skyward.home import skyward_cache

    return skyward_cache() / "bytecode"
