"""A user's own environment, without hatchling, ships its Skyward to an SSH node, however it was installed.

Each test makes a fresh `python -m venv` (no system site-packages), installs a copy of this
checkout's skyward-core there as a user would (editable, or `pip install ./skyward-core` with the
source deleted afterwards), checks that `import hatchling` fails in it, and runs a pool on a real
sshd host from that venv. The copy holds a module this checkout does not have, with a token only
this test knows: the node can import it only from the wheel the client shipped, not from PyPI.
The node's venv is a plain one (no `SSH(python=...)`), so nothing of the client's is visible there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

import pytest
from ssh_hosts import SSHHosts, find_uv

ROOT = Path(__file__).resolve().parents[2]

POOL = """
import json, sys
import skyward as sky

@sky.function
def where():
    import importlib.metadata
    import skyward
    from skyward import _shipped_by_test
    return {"file": skyward.__file__, "token": _shipped_by_test.TOKEN,
            "version": importlib.metadata.version("skyward-core")}

target, key_file, known_hosts = sys.argv[1:4]
provider = sky.SSH(hosts=[target], key_file=key_file, known_hosts=known_hosts)
with sky.Compute(provider=provider, nodes=1, console=False, logging=False) as pool:
    print(json.dumps(where() >> pool))
"""


def copy_of_skyward_core(folder: Path, token: str) -> Path:
    """This checkout's skyward-core, with a module that says `token`."""
    copy = folder / "skyward-core"
    shutil.copytree(
        ROOT / "skyward-core", copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist")
    )
    (copy / "src" / "skyward" / "_shipped_by_test.py").write_text(f"TOKEN = {token!r}\n")
    return copy


def user_venv(folder: Path, source: Path, *install: str) -> Path:
    """A fresh venv with `pip install <install>` of `source`; its python. pip builds in its own
    isolated env. The venv's dependencies of skyward-core come first, from uv (they are not what
    is tested, and pip took most of the test's CPU installing them), and the venv has no pip of
    its own (ensurepip's seconds): this interpreter's pip installs into it (`pip --python`)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    dependencies = tomllib.loads((source / "pyproject.toml").read_text())["project"]["dependencies"]
    uv = find_uv()
    assert uv is not None, "uv is missing: pip install -r requirements-test.txt"
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(python), *dependencies], check=True, timeout=600
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", *install,
         str(source)],
        check=True, timeout=600,
    )
    no_backend = subprocess.run([str(python), "-c", "import hatchling"], capture_output=True, text=True)
    assert no_backend.returncode != 0 and "No module named 'hatchling'" in no_backend.stderr
    return python


def run_pool(python: Path, hosts: SSHHosts, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["SKYWARD_HOME"] = str(home)  # this user's own wheel cache
    result = subprocess.run(
        [str(python), "-c", POOL, hosts.servers[0].target, str(hosts.key_file), str(hosts.known_hosts)],
        capture_output=True, text=True, timeout=600, env=env, cwd=home,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_editable_install_without_hatchling_runs_a_pool_on_an_ssh_host(
    ssh_hosts: SSHHosts, tmp_path: Path
) -> None:
    token = uuid.uuid4().hex
    source = copy_of_skyward_core(tmp_path, token)
    python = user_venv(tmp_path / "venv", source, "-e")
    found = run_pool(python, ssh_hosts, tmp_path)
    assert found["token"] == token
    assert found["file"].startswith(str(ssh_hosts.servers[0].home) + "/")  # the node's venv
    assert found["version"] == subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('skyward-core'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_non_editable_install_whose_source_is_gone_runs_a_pool_on_an_ssh_host(
    ssh_hosts: SSHHosts, tmp_path: Path
) -> None:
    token = uuid.uuid4().hex
    source = copy_of_skyward_core(tmp_path / "checkout", token)
    python = user_venv(tmp_path / "venv", source)
    shutil.rmtree(tmp_path / "checkout")
    found = run_pool(python, ssh_hosts, tmp_path)
    assert found["token"] == token
    assert found["file"].startswith(str(ssh_hosts.servers[0].home) + "/")
