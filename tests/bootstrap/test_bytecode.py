"""The worker's bytecode, compiled by the client and unpacked on a cold node (bootstrap/bytecode.py)."""

from __future__ import annotations

import importlib.util
import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from skyward.bootstrap import bytecode
from skyward.bootstrap.bytecode import BUNDLE, bytecode_bundle, client_bundle, site_packages
from skyward.bootstrap.phases import PRELUDE
from skyward.bootstrap.skyward_installs import skyward_phase


def members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def test_the_bundle_holds_checked_hash_bytecode_of_what_the_worker_imports(tmp_path: Path) -> None:
    import attr

    import skyward.worker.main as worker_main

    found = members(bytecode_bundle(tmp_path))
    for module, relative in ((worker_main, "skyward/worker/main.py"), (attr, "attr/__init__.py")):
        pyc = found[importlib.util.cache_from_source(relative)]
        assert int.from_bytes(pyc[4:8], "little") == 0b11  # checked hash: valid where the source is the same
        assert pyc[8:16] == importlib.util.source_hash(Path(module.__file__).read_bytes())
    assert not [name for name in found if name.startswith(("json/", "asyncio/"))]  # the node has its stdlib's


def test_a_bundle_is_found_again_until_one_of_its_sources_changes(tmp_path: Path) -> None:
    package = tmp_path / "src" / "shipped"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    made = bytecode_bundle(tmp_path / "cache", modules=("shipped",), path=(str(tmp_path / "src"),))
    assert importlib.util.cache_from_source("shipped/__init__.py") in members(made)
    assert client_bundle(tmp_path / "cache") == made

    (package / "__init__.py").write_text("VALUE = 2\n")
    assert client_bundle(tmp_path / "cache") is None  # stale: made again in the background, for the next pool
    assert bytecode._making is not None
    bytecode._making.join()


def test_a_bundle_of_another_checkouts_skyward_is_not_this_clients(tmp_path: Path) -> None:
    """Two checkouts (or venvs) on one machine share `$SKYWARD_HOME`: the other's bundle, its
    files unchanged, is not taken for this interpreter's."""
    other = tmp_path / "other" / "skyward"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    made = bytecode_bundle(tmp_path / "cache", modules=("skyward",), path=(str(tmp_path / "other"),))
    assert importlib.util.cache_from_source("skyward/__init__.py") in members(made)
    assert client_bundle(tmp_path / "cache") is None  # made again, from this client's own skyward
    assert bytecode._making is not None
    bytecode._making.join()
    assert client_bundle(tmp_path / "cache") not in (None, made)


def unpack(tmp_path: Path, bundle: bytes) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The skyward phase's unpacking, run on a venv whose site-packages holds package `present`."""
    venv = tmp_path / "venv"
    site = venv / site_packages()
    (site / "present").mkdir(parents=True)
    (site / "present" / "module.py").write_text("X = 1\n")
    wheels = tmp_path / "node" / "wheels"
    wheels.mkdir(parents=True)
    (wheels / BUNDLE).write_bytes(bundle)
    import skyward as sky

    phase = skyward_phase(sky.Image(), (f"{wheels}/skyward_core-0.1.0-py3-none-any.whl",), core_in_pip=True)
    script = PRELUDE + f"W={tmp_path / 'node'}\nV={venv}\n__sky_main() {{\n{phase}}}\n__sky_main\n"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60), site


def tar_of(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in names:
            entry = tarfile.TarInfo(name)
            entry.size = 3
            tar.addfile(entry, io.BytesIO(b"pyc"))
    return buffer.getvalue()


def test_only_the_bytecode_whose_source_the_venv_holds_is_unpacked(tmp_path: Path) -> None:
    result, site = unpack(tmp_path, tar_of([
        "present/__pycache__/module.cpython-311.pyc", "absent/__pycache__/__init__.cpython-311.pyc",
    ]))
    assert result.returncode == 0, result.stderr
    assert (site / "present" / "__pycache__" / "module.cpython-311.pyc").read_bytes() == b"pyc"
    assert not (site / "absent").exists()  # it would import as an empty namespace package


@pytest.mark.parametrize(
    "bundle",
    [b"not a tar", tar_of(["absent/__pycache__/x.cpython-311.pyc"])],
    ids=["not-a-tar", "nothing-present"],  # the tar's bytes hold its time: an id that changes between workers
)
def test_a_bundle_that_does_not_unpack_only_says_so(tmp_path: Path, bundle: bytes) -> None:
    result, site = unpack(tmp_path, bundle)
    assert result.returncode == 0, result.stderr
    assert "::skyward-phase:skyward:done" in result.stdout
    assert sorted(os.listdir(site)) == ["present"]
