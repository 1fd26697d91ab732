"""`sky version`: every Skyward distribution installed, and Python."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path

from cli_support import Sky


def test_version_lists_every_installed_skyward_distribution_with_its_version(sky: Sky) -> None:
    report = sky.json("version")
    listed = {d["name"]: d["version"] for d in report["distributions"]}
    for name in ("skyward-core", "skyward-aws", "skyward-runpod", "skyward-vastai"):
        assert listed[name] == importlib.metadata.version(name)
    assert report["distributions"][0]["name"] == "skyward-core"


def test_version_names_the_python_running_skyward(sky: Sky) -> None:
    python = sky.json("version")["python"]
    assert python["version"] == platform.python_version()
    assert python["executable"] == sys.executable


def test_version_prints_a_table_for_people(sky: Sky) -> None:
    done = sky("version")
    assert done.returncode == 0
    assert "skyward-core" in done.stdout and f"Python ({platform.python_implementation()})" in done.stdout


def test_the_sky_console_script_is_installed_beside_python() -> None:
    script = Path(sys.executable).parent / "sky"
    done = subprocess.run([str(script), "version", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and '"skyward-core"' in done.stdout


def test_sky_without_a_command_prints_help_with_the_usage_exit_code(sky: Sky) -> None:
    done = sky()
    assert done.returncode == 2 and "Commands:" in done.stdout + done.stderr
