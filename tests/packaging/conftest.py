"""The release wheels the packaging tests read and install, built once per test run.

Each distribution is built from its own folder by its own build backend (`pip wheel --no-deps`),
the way a release builds it. One pip run builds them all, once for the whole run: the xdist
workers share the result through a folder beside their own tmp folders, the first to need it
building it under a file lock. A pip run per test cost a second and a half of CPU each, and the
packaging tests asked for thirty.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
#: Every folder that builds a wheel: the code distributions and the `skyward` meta distribution.
FOLDERS = sorted(path.parent.name for path in ROOT.glob("skyward-*/pyproject.toml"))


def distribution_name(folder: str) -> str:
    """The wheel file name's distribution part for `folder` (PEP 427's escaping of its name)."""
    name = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]["name"]
    return re.sub(r"[-_.]+", "_", name).lower()


@pytest.fixture(scope="session")
def release_wheels(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, Path]:
    """The wheel of every folder (`FOLDERS`), by folder, built once for the run."""
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":  # the workers' tmp folders share a parent: the run's
        shared = shared.parent
    out = shared / "release-wheels"
    with FileLock(str(shared / "release-wheels.lock")):
        if not (out / "DONE").exists():
            subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                 "--wheel-dir", str(out), *(str(ROOT / folder) for folder in FOLDERS)],
                check=True,
            )
            (out / "DONE").write_text("")
    built: dict[str, Path] = {}
    for folder in FOLDERS:
        (built[folder],) = out.glob(f"{distribution_name(folder)}-[0-9]*.whl")
    return built
