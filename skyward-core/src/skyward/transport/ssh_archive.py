"""A copy onto a host as one tar archive streamed into one exec request: `SSHRunner.put`'s way.

SFTP waits on the link for every step of a copy: `makedirs` asks about each parent folder in
turn (a stat and a mkdir per level: ~14 round trips for `~/.skyward/pools/<pool>/node-<i>`), and
each file is an open, its writes and a close. Across a 50-150 ms link that is seconds for a few
small files. Here the folder is packed locally and sent on the stdin of `mkdir -p <parent> && tar
-x`: a channel open, the command, and the bytes, whatever the depth or the number of files.

Hosts without `tar` (exit status 127) are told apart from a failed copy, so the caller can fall
back to SFTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
import shlex
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any

__all__ = ["CHUNK", "NoTar", "pack", "put_archive", "unpack_command"]

#: Bytes per write into the channel (asyncssh applies the channel's window: `drain` waits).
CHUNK = 256 * 1024
#: Archives up to this size are built in memory; larger ones spill to a temporary file.
IN_MEMORY = 16 * 1024 * 1024
#: The shell's exit status for a command it cannot find.
NOT_FOUND = 127


class NoTar(OSError):
    """The host has no `tar` to unpack an archive with."""


def pack(local: Path, name: str) -> IO[bytes]:
    """`local` (a file or a folder, recursively) as an uncompressed tar whose one top entry is
    `name`, rewound; owners are left out (the host's user owns what it unpacks)."""
    spool = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115 - returned open

    def anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    try:
        with tarfile.open(fileobj=spool, mode="w", format=tarfile.PAX_FORMAT) as archive:
            archive.add(str(local), arcname=name, recursive=True, filter=anonymous)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def unpack_command(remote: str) -> str:
    """sh: create `remote`'s parent and unpack the archive on stdin there (its entry is named for
    `remote`, so a folder lands at `remote`, merged into what is there). `-o`: as the host's user,
    not the archive's owners."""
    parent = posixpath.dirname(remote.rstrip("/")) or "/"
    q = shlex.quote(parent)
    return f"mkdir -p {q} && tar -xof - -C {q}"


async def put_archive(conn: Any, local: Path, remote: str) -> None:
    """Copy `local` to `remote` (the path it gets, not a folder to put it in) over one exec request
    on `conn`. Raises `NoTar` when the host has no tar, `OSError` naming the host's error when the
    unpacking fails; asyncssh's errors pass through (a dropped connection)."""
    name = posixpath.basename(remote.rstrip("/"))
    if not name:
        raise ValueError(f"put_archive: {remote!r} names no file or folder to copy {local} to")
    archive = await asyncio.to_thread(pack, local, name)
    try:
        process = await conn.create_process(unpack_command(remote), encoding=None)
        try:
            # A host whose command ends before it read everything (no tar: exit 127) closes the
            # channel under the writes: its exit status, not the broken pipe, says what happened.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                while chunk := archive.read(CHUNK):
                    process.stdin.write(chunk)
                    await process.stdin.drain()
                process.stdin.write_eof()
            result = await process.wait()
        finally:
            with contextlib.suppress(Exception):
                process.close()
    finally:
        archive.close()
    if result.exit_status == NOT_FOUND:
        raise NoTar(f"the host has no tar to unpack {local.name} with")
    if result.exit_status != 0:
        error = bytes(result.stderr or b"").decode(errors="replace").strip()[-2000:]
        raise OSError(f"copying {local.name} to {remote} failed (exit {result.exit_status}): {error}")
