"""What `sky compute upload|download` runs on a node: a tar.gz archive unpacked, or packed.

Files travel as one gzipped tar in each direction (through the server, as a task's argument or
result), so a folder keeps its layout and permissions. Unpacking uses tarfile's "data" filter:
no absolute paths, no `..`, no links out of the destination, no device files. A relative
destination is relative to the worker's working folder: the node folder on SSH and cloud nodes
(where a task's relative paths point too), the folder the server was started in on Local.

Only the standard library is imported, so the functions are shipped by reference.
"""

from __future__ import annotations

import io
import os
import tarfile


def pack(path: str) -> bytes:
    """`path` (a file or a folder) as a tar.gz whose one top entry is its base name."""
    source = os.path.expanduser(path)
    if not os.path.exists(source):
        raise FileNotFoundError(f"{path}: no such file or folder on node (working folder {os.getcwd()})")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(source, arcname=os.path.basename(os.path.normpath(source)) or ".")
    return buffer.getvalue()


def unpack(data: bytes, destination: str) -> list[str]:
    """Unpack the tar.gz `data` into the folder `destination` (created); the paths written."""
    folder = os.path.abspath(os.path.expanduser(destination or "."))
    os.makedirs(folder, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        names = archive.getnames()
        archive.extractall(folder, filter="data")
    return [os.path.join(folder, name) for name in names]
