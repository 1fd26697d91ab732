"""`sky compute upload|download` move archives in chunks, never whole (skyward/server/files.py)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyward.server.files import CHUNK, file_chunks, pack_chunks, pack_file, unpack_chunks


def folder_with_a_big_file(root: Path) -> Path:
    data = root / "dataset"
    (data / "part").mkdir(parents=True)
    (data / "part" / "rows.csv").write_text("a,b\n1,2\n")
    (data / "z-blob.bin").write_bytes(os.urandom(3 * CHUNK + 123))  # random: gzip cannot shrink it
    return data


def test_a_folder_is_packed_in_chunks_no_larger_than_one_chunk(tmp_path: Path) -> None:
    chunks = list(pack_chunks(str(folder_with_a_big_file(tmp_path))))
    assert len(chunks) >= 3 and max(len(c) for c in chunks) <= CHUNK


def test_chunks_unpack_into_the_same_tree(tmp_path: Path) -> None:
    source = folder_with_a_big_file(tmp_path / "here")
    written = unpack_chunks(pack_chunks(str(source)), str(tmp_path / "there"))
    copy = tmp_path / "there" / "dataset"
    assert (copy / "part" / "rows.csv").read_text() == "a,b\n1,2\n"
    assert (copy / "z-blob.bin").read_bytes() == (source / "z-blob.bin").read_bytes()
    assert str(copy / "z-blob.bin") in written


def test_unpacking_reads_the_chunks_as_it_goes(tmp_path: Path) -> None:
    source = folder_with_a_big_file(tmp_path / "here")
    archive = tmp_path / "a.tar.gz"
    with archive.open("wb") as target:
        pack_file(str(source), target)
    taken: list[int] = []

    def counted() -> Iterator[bytes]:
        for chunk in file_chunks(str(archive)):
            taken.append(len(chunk))
            yield chunk

    seen_before_end: list[int] = []
    chunks = counted()

    def watching() -> Iterator[bytes]:
        for chunk in chunks:
            if (tmp_path / "there" / "dataset" / "part" / "rows.csv").exists():
                seen_before_end.append(len(taken))
            yield chunk

    unpack_chunks(watching(), str(tmp_path / "there"))
    assert max(taken) <= CHUNK and len(taken) >= 3
    # the small file (archived before the blob) was written while the blob's chunks were still to
    # come: nothing waited for the whole archive
    assert seen_before_end and min(seen_before_end) < len(taken)


def test_a_missing_path_fails_at_the_first_chunk(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file or folder on node"):
        next(pack_chunks(str(tmp_path / "nothing")))


def test_unpacking_refuses_a_path_out_of_the_destination(tmp_path: Path) -> None:
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"hi"))
    with pytest.raises(tarfile.TarError):
        unpack_chunks([buffer.getvalue()], str(tmp_path / "dest"))
    assert not (tmp_path / "escaped.txt").exists()
