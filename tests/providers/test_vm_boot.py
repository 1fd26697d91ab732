"""`skyward.providers.vm_boot`: a VM's startup script keeps the account's credentials for its
guardian, readable by the owner only, and the end command runs the cloud's program with its
arguments, whatever characters they hold. Run here with bash and python3, as a VM runs them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from skyward.providers import vm_boot
from skyward.providers.access import MachineAccess

AWKWARD = "it's a $ecret; with `quotes` and \\ slashes"


def test_the_kept_credentials_are_read_back_whole_and_by_the_owner_only(tmp_path: Path) -> None:
    line = vm_boot.keep_secrets({"CLOUD_ID": "id-1", "CLOUD_SECRET": AWKWARD}, ".cloud.env")
    subprocess.run(["bash", "-c", line], check=True, env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]})
    kept = tmp_path / ".cloud.env"
    assert kept.read_text() == f"CLOUD_ID=id-1\nCLOUD_SECRET={AWKWARD}\n"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_the_end_command_runs_the_program_with_its_arguments(tmp_path: Path) -> None:
    program = "import sys, pathlib\npathlib.Path(sys.argv[1]).write_text(sys.argv[2])\n"
    target = tmp_path / "ended"
    command = vm_boot.end_command(program, str(target), AWKWARD).replace("python3", sys.executable, 1)
    assert "\n" not in command, "startup scripts are read by line"
    subprocess.run(["bash", "-c", command], check=True)
    assert target.read_text() == AWKWARD


def test_a_startup_script_without_a_guardian_stops_on_failure_and_ends_keeping_the_credentials() -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITEST login")
    script = vm_boot.startup_script(access, secrets={"KEY": "k"}, secrets_file=".k.env")
    assert script.splitlines()[:2] == ["#!/bin/bash", "set -e"]
    assert script.splitlines()[-1].startswith("(umask 077;") and ".k.env" in script
