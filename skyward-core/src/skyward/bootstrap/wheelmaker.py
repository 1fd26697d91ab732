"""A wheel written with the standard library alone.

Skyward's distributions are pure Python, so shipping one to a node needs no build backend
(hatchling) in the client's environment: `wheel_bytes` lays out a PEP 427 wheel from the files it is
given, with `{name}-{version}.dist-info/` holding the METADATA and entry points the installed
distribution already has, a WHEEL of its own and a RECORD of sha256 hashes (PEP 376). Entries are
sorted and carry a fixed timestamp and mode, so the same files always give the same bytes (and the
same digest in the wheel cache).
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import zipfile
from collections.abc import Mapping

__all__ = ["dist_info_dir", "normalize", "record_hash", "wheel_bytes", "wheel_filename"]

#: The earliest time a zip entry can hold: every entry gets it, so a rebuild gives the same bytes.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
WHEEL = "Wheel-Version: 1.0\nGenerator: skyward\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
#: Written here (WHEEL, RECORD) or by the installer on the client (the others): never copied.
GENERATED = frozenset({"WHEEL", "RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them: `Skyward_Core` is `skyward-core`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _stem(name: str, version: str) -> str:
    return f"{normalize(name).replace('-', '_')}-{version.replace('-', '_')}"


def wheel_filename(name: str, version: str) -> str:
    """`skyward_core-0.1.0-py3-none-any.whl`: the file name PEP 427 gives a pure-Python wheel."""
    return f"{_stem(name, version)}-py3-none-any.whl"


def dist_info_dir(name: str, version: str) -> str:
    return f"{_stem(name, version)}.dist-info"


def record_hash(data: bytes) -> str:
    """A RECORD hash: `sha256=` and the urlsafe base64 digest without padding (PEP 376/427)."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _check(path: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path!r} is not a relative path inside a wheel")
    return path


def wheel_bytes(name: str, version: str, files: Mapping[str, bytes], metadata: Mapping[str, bytes]) -> bytes:
    """The wheel of distribution `name` at `version`.

    `files` maps paths inside the wheel (`skyward/__init__.py`) to their bytes; `metadata` maps
    names inside the dist-info folder (`METADATA`, `entry_points.txt`, `licenses/LICENSE`) to
    theirs. WHEEL and RECORD are written here; installer files in `metadata` are left out.
    """
    if "METADATA" not in metadata:
        raise ValueError(f"{name} {version}: a wheel needs the distribution's METADATA")
    info = dist_info_dir(name, version)
    entries = {_check(path): data for path, data in files.items()}
    if any(path.split("/", 1)[0].endswith(".dist-info") for path in entries):
        raise ValueError(f"{name} {version}: dist-info files go in `metadata`, not in `files`")
    dist_info = {
        f"{info}/{_check(path)}": data for path, data in metadata.items() if path not in GENERATED
    }
    dist_info[f"{info}/WHEEL"] = WHEEL.encode()
    ordered = [*sorted(entries.items()), *sorted(dist_info.items())]  # dist-info last, RECORD at the end
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data in ordered)
    ordered.append((f"{info}/RECORD", (record + f"{info}/RECORD,,\n").encode()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path, data in ordered:
            entry = zipfile.ZipInfo(path, date_time=ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return buffer.getvalue()
