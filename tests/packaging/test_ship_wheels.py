"""Skyward ships itself to the nodes as wheels it assembles with the standard library, no build backend.

The checkout's distributions are installed editable here, so their wheels come from the source
tree. Other installs are made for each test: a distribution's `.dist-info` (and, for a
non-editable one, its installed files) in a folder on `PYTHONPATH`, which `importlib.metadata`
finds exactly as it finds a pip install; `local_wheels` then runs in a subprocess that sees it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from skyward.bootstrap.wheels import local_wheels

ROOT = Path(__file__).resolve().parents[2]

LOCAL_WHEELS = """
import json, sys
from pathlib import Path
from typing import Any
from skyward.bootstrap.wheels import local_wheels
from skyward.errors import ConfigurationError
try:
    print(json.dumps([str(p) for p in local_wheels(Path(sys.argv[1]))]))
except ConfigurationError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def run(code: str, *args: str, site: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env
    )


def wheels_seen_from(site: Path, dest: Path) -> dict[str, str] | str:
    """`local_wheels(dest)` in a process that sees the installs in `site`: {file name: path}, or the error."""
    result = run(LOCAL_WHEELS, str(dest), site=site)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[-1])  # after any log lines
    if isinstance(found, dict):
        return str(found["error"])
    return {Path(p).name: p for p in found}


def dist_info(
    site: Path, name: str, version: str, *, direct_url: dict[str, object] | None, record: list[str] | None
) -> Path:
    """An installed distribution's `.dist-info` in `site`: METADATA, entry points, PEP 610 and RECORD."""
    module = name.replace("-", "_")
    info = site / f"{module}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.11\n"
    )
    (info / "entry_points.txt").write_text(
        f"[console_scripts]\n{name}-cli = {module}:main\n\n[skyward.test]\n{module} = {module}\n"
    )
    (info / "INSTALLER").write_text("pip\n")
    listed = [f"{info.name}/{n},," for n in ("METADATA", "entry_points.txt", "INSTALLER", "RECORD")]
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
        listed.append(f"{info.name}/direct_url.json,,")
    if record is not None:
        (info / "RECORD").write_text("\n".join([*record, *listed]) + "\n")
    return info


def source_tree(root: Path, name: str = "skyward-fake") -> Path:
    """A checkout of distribution `name`, laid out as this repository's are (hatch, `src/<pkg>`)."""
    module = name.replace("-", "_")
    package = root / "src" / module
    (package / "__pycache__").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.3.dev0"\n\n'
        f'[tool.hatch.build.targets.wheel]\npackages = ["src/{module}"]\n'
    )
    (package / "__init__.py").write_text("VALUE = 1\n\ndef main():\n    print('fake')\n")
    (package / "data.json").write_text("{}\n")
    (package / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"stale bytecode")
    return root


def editable_install(site: Path, source: Path, name: str = "skyward-fake") -> None:
    """What `pip install -e <source>` leaves: a dist-info naming the source tree, and a .pth."""
    module = name.replace("-", "_")
    site.mkdir(parents=True, exist_ok=True)
    (site / f"_editable_impl_{module}.pth").write_text(str(source / "src") + "\n")
    url = {"url": source.as_uri(), "dir_info": {"editable": True}}
    dist_info(site, name, "0.3.dev0", direct_url=url, record=[f"_editable_impl_{module}.pth,,"])


def test_the_checkouts_skyward_core_wheel_installs_with_pip_and_imports(tmp_path: Path) -> None:
    core = next(w for w in local_wheels(tmp_path / "cache") if w.name.startswith("skyward_core-"))
    target = tmp_path / "target"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(core)],
        check=True,
    )
    code = (
        "import sys, importlib.metadata as md; sys.path.insert(0, sys.argv[1]); import skyward; "
        "(dist,) = [d for d in md.distributions(path=[sys.argv[1]])]; "
        "print(skyward.__file__); print(sorted(f'{e.group}:{e.name}={e.value}' for e in dist.entry_points))"
    )
    out = run(code, str(target)).stdout.splitlines()
    assert out[0] == str(target / "skyward" / "__init__.py")
    assert out[1] == "['console_scripts:sky=skyward.cli:main', 'skyward:core=skyward.client.core_hooks']"


def test_every_record_line_of_an_assembled_wheel_matches_its_file(tmp_path: Path) -> None:
    (core, *_) = local_wheels(tmp_path)
    with zipfile.ZipFile(core) as archive:
        (record_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/RECORD")]
        lines = archive.read(record_name).decode().splitlines()
        assert sorted(line.split(",")[0] for line in lines) == sorted(archive.namelist())
        for line in lines:
            path, digest, size = line.rsplit(",", 2)
            if path == record_name:
                assert (digest, size) == ("", "")
                continue
            data = archive.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={expected}", len(data))
    assert not any("__pycache__" in line or ".pyc," in line for line in lines)


def test_an_unchanged_install_gives_the_same_wheel_bytes(tmp_path: Path) -> None:
    first = local_wheels(tmp_path / "one")
    second = local_wheels(tmp_path / "two")
    assert [w.read_bytes() for w in first] == [w.read_bytes() for w in second]
    assert [w.relative_to(tmp_path / "one") for w in first] == [
        w.relative_to(tmp_path / "two") for w in second
    ]  # the same digest folders


def test_an_edit_to_an_editable_source_gives_a_new_wheel_with_the_edit(tmp_path: Path) -> None:
    source = source_tree(tmp_path / "skyward-fake")
    editable_install(tmp_path / "site", source)
    name = "skyward_fake-0.3.dev0-py3-none-any.whl"
    before = wheels_seen_from(tmp_path / "site", tmp_path / "cache")
    (source / "src" / "skyward_fake" / "__init__.py").write_text("VALUE = 2\n")
    after = wheels_seen_from(tmp_path / "site", tmp_path / "cache")
    assert isinstance(before, dict) and isinstance(after, dict)
    assert before[name] != after[name]
    with zipfile.ZipFile(before[name]) as old, zipfile.ZipFile(after[name]) as new:
        assert old.read("skyward_fake/__init__.py").startswith(b"VALUE = 1")
        assert new.read("skyward_fake/__init__.py") == b"VALUE = 2\n"
        assert "skyward_fake/data.json" in new.namelist()
        assert not any("__pycache__" in n for n in new.namelist())


def test_a_non_editable_install_ships_its_installed_files_when_its_source_is_gone(tmp_path: Path) -> None:
    site = tmp_path / "site"
    package = site / "skyward_fake"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 'installed'\n\ndef main():\n    print('fake')\n")
    (package / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"bytecode")
    record = [
        "skyward_fake/__init__.py,,", "skyward_fake/__pycache__/__init__.cpython-311.pyc,,",
        "../../../bin/skyward-fake-cli,,",
    ]
    gone = {"url": (tmp_path / "deleted-checkout").as_uri(), "dir_info": {}}
    dist_info(site, "skyward-fake", "0.3.dev0", direct_url=gone, record=record)
    wheels = wheels_seen_from(site, tmp_path / "cache")
    assert isinstance(wheels, dict)
    target = tmp_path / "target"
    wheel = wheels["skyward_fake-0.3.dev0-py3-none-any.whl"]
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), wheel],
        check=True,
    )
    code = "import sys; sys.path.insert(0, sys.argv[1]); import skyward_fake; print(skyward_fake.VALUE)"
    assert run(code, str(target)).stdout.strip() == "installed"
    assert (target / "bin" / "skyward-fake-cli").is_file()  # the console script, from entry_points.txt
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    info = "skyward_fake-0.3.dev0.dist-info"
    assert names == {
        "skyward_fake/__init__.py", f"{info}/METADATA", f"{info}/entry_points.txt", f"{info}/WHEEL",
        f"{info}/RECORD",
    }


def test_a_wheel_file_install_ships_that_file_and_its_installed_files_once_it_is_gone(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "skyward_fake").mkdir(parents=True)
    (site / "skyward_fake" / "__init__.py").write_text("VALUE = 'from the wheel'\n")
    wheel_file = tmp_path / "downloads" / "skyward_fake-0.3.0-py3-none-any.whl"
    wheel_file.parent.mkdir()
    wheel_file.write_bytes(b"the user's own wheel")
    url = {"url": wheel_file.as_uri(), "archive_info": {}}
    dist_info(site, "skyward-fake", "0.3.0", direct_url=url, record=["skyward_fake/__init__.py,,"])
    while_there = wheels_seen_from(site, tmp_path / "cache")
    assert isinstance(while_there, dict)
    assert while_there[wheel_file.name] == str(wheel_file)
    wheel_file.unlink()
    after = wheels_seen_from(site, tmp_path / "cache")
    assert isinstance(after, dict)
    assert Path(after[wheel_file.name]).is_relative_to(tmp_path / "cache")
    with zipfile.ZipFile(after[wheel_file.name]) as archive:
        assert archive.read("skyward_fake/__init__.py") == b"VALUE = 'from the wheel'\n"


def test_a_distribution_that_cannot_be_shipped_is_named_with_the_fix(tmp_path: Path) -> None:
    site = tmp_path / "site"
    record = ["skyward_ghost/__init__.py,,"]  # listed, but the file is gone
    url = {"url": (tmp_path / "deleted-checkout").as_uri(), "dir_info": {}}
    dist_info(site, "skyward-ghost", "0.2.dev1", direct_url=url, record=record)
    error = wheels_seen_from(site, tmp_path / "cache")
    assert isinstance(error, str)
    assert "skyward-ghost 0.2.dev1: 1 of its installed files are missing" in error
    assert "pip install -e ./skyward-core" in error
    assert 'Image(skyward_source="pypi")' in error


def test_a_release_installed_from_an_index_without_its_files_is_left_to_pypi(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist_info(site, "skyward-ghost", "0.2.0", direct_url=None, record=["skyward_ghost/__init__.py,,"])
    result = run(LOCAL_WHEELS, str(tmp_path / "cache"), site=site)
    *log, last = result.stdout.splitlines()
    wheels = [Path(p).name for p in json.loads(last)]
    assert not any(name.startswith("skyward_ghost-") for name in wheels)
    assert any(name.startswith("skyward_core-") for name in wheels)
    assert any("skyward.wheel_from_pypi" in line and "skyward-ghost" in line for line in log)


POOL_ON_A_CLOSED_PORT = """
import time, skyward as sky
from skyward.errors import ConfigurationError
provider = sky.SSH(hosts=["127.0.0.1:1"], known_hosts="/dev/null")
started = time.monotonic()
try:
    with sky.Compute(provider=provider, nodes=1, console=False, logging=False) as pool:
        pass
except ConfigurationError as exc:
    print("ConfigurationError", f"{time.monotonic() - started:.1f}")
    print(exc)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_a_pool_whose_skyward_cannot_be_shipped_fails_before_asking_for_a_machine(tmp_path: Path) -> None:
    # Nothing listens on port 1: a pool that tried to reach its host would fail to connect instead.
    site = tmp_path / "site"
    url = {"url": (tmp_path / "deleted-checkout").as_uri(), "dir_info": {"editable": True}}
    dist_info(site, "skyward-ghost", "0.2.dev1", direct_url=url, record=[])
    result = run(POOL_ON_A_CLOSED_PORT, site=site)
    assert result.returncode == 0, result.stderr
    first, *message = result.stdout.splitlines()
    assert first.split()[0] == "ConfigurationError", result.stdout
    assert "skyward-ghost 0.2.dev1: it is an editable install of" in "\n".join(message)


def test_a_sources_pyproject_is_parsed_once_while_unchanged_and_again_once_edited(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # Every pool start asks which packages each distribution ships; parsing 17 pyproject.toml
    # files again was most of a warm start's client-side work.
    import tomllib

    from skyward.bootstrap import wheels

    source = tmp_path / "dist"
    (source / "src" / "alpha").mkdir(parents=True)
    (source / "src" / "beta").mkdir(parents=True)
    pyproject = source / "pyproject.toml"
    pyproject.write_text('[tool.hatch.build.targets.wheel]\npackages = ["src/alpha"]\n')
    parsed: list[str] = []
    loads = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or loads(text))
    assert wheels._packages(source) == [source / "src" / "alpha"]
    assert wheels._packages(source) == [source / "src" / "alpha"]
    assert len(parsed) == 1
    pyproject.write_text('[tool.hatch.build.targets.wheel]\npackages = ["src/alpha", "src/beta"]\n')
    assert wheels._packages(source) == [source / "src" / "alpha", source / "src" / "beta"]
    assert len(parsed) == 2
