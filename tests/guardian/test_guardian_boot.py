"""The guardian a cloud machine starts at boot (`skyward.guardian.boot`), before any login.

`MachineAccess.container_script` (RunPod's start command, Vast's onstart) and `cloud_config` (AWS
user data) are run here for real, with bash in a sandbox standing for the machine: the guardian
must be running in the pool's node folder with the initial lease, and the pool's first login
must adopt it rather than start a second one.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from skyward import guardian
from skyward.guardian.agent import CLAIM_HOLD, alive
from skyward.guardian.boot import SOURCE_VARIABLE, BootGuardian, packed
from skyward.providers.cloud import MachineAccess

#: EC2 refuses user data over 16 KB.
AWS_USER_DATA_LIMIT = 16384
BOOT = BootGuardian("pool1", 3, ttl=2.0, initial=7.0, end_command="echo ended")


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    yield home
    subprocess.run(["sh", "-c", guardian.release_command(str(folder(home)))], check=False)


def folder(home: Path) -> Path:
    return home / ".skyward" / "pools" / "pool1" / "node-3"


def guardian_pid(home: Path) -> int:
    lock = folder(home) / "guardian.lock"
    assert wait_for(lambda: lock.exists() and lock.read_text().strip().isdigit()), "no guardian holds it"
    return int(lock.read_text())


def wait_for(predicate, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def arguments(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def test_the_container_script_starts_the_guardian_with_the_initial_lease(home: Path, tmp_path: Path) -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIlogin pool")
    script = access.container_script(ssh_dir=str(tmp_path / "etc-ssh"), home=str(home), guardian=BOOT)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "SKYWARD_SSH_HOST_KEY": access.host_key_b64,
           SOURCE_VARIABLE: packed()}
    subprocess.run(["bash", "-c", f"set -e; {script}"], check=True, timeout=30, env=env)

    pid = guardian_pid(home)
    assert alive(pid)
    args = arguments(pid)
    assert args[args.index("--dir") + 1] == str(folder(home))
    assert args[args.index("--initial") + 1] == "7.0"
    assert args[args.index("--ttl") + 1] == "2.0"
    assert args[args.index("--end-command") + 1] == "echo ended"


def test_the_cloud_config_starts_the_guardian_at_boot(home: Path) -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIlogin pool")
    data = access.cloud_config(BOOT)
    assert len(data.encode()) <= AWS_USER_DATA_LIMIT
    config = yaml.safe_load(data)
    (argv,) = config["runcmd"]
    assert argv[:2] == ["sh", "-c"]
    subprocess.run(argv, check=True, timeout=30, env={"PATH": os.environ["PATH"], "HOME": str(home)})

    args = arguments(guardian_pid(home))
    assert args[args.index("--initial") + 1] == "7.0"


def test_the_pools_first_login_adopts_the_guardian_started_at_boot(home: Path) -> None:
    line = BOOT.command(home=f"'{home}'")
    subprocess.run(["bash", "-c", line], check=True, timeout=30, env={"PATH": os.environ["PATH"],
                   SOURCE_VARIABLE: packed()})
    booted = guardian_pid(home)

    login = guardian.start_command(str(folder(home)), ttl=2.0, initial=7.0, end_command="echo ended")
    answer = subprocess.run(["sh", "-c", login], input=guardian.source(), capture_output=True, timeout=30)
    assert answer.stdout.decode().split() == ["running", str(booted)]


def test_a_machine_without_python3_boots_without_a_guardian(home: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with the shell's tools and no python3
    bin_dir.mkdir()
    for tool in ("mkdir", "chmod", "mv"):
        found = subprocess.check_output(["sh", "-c", f"command -v {tool}"]).decode().strip()
        (bin_dir / tool).symlink_to(found)
    script = f"set -e; {BOOT.command(home=repr(str(home)))}; echo booted"
    env = {"PATH": str(bin_dir), SOURCE_VARIABLE: packed()}
    result = subprocess.run(["/bin/bash", "-c", script], capture_output=True, timeout=30, env=env)
    assert result.stdout.decode().split() == ["booted"]
    assert not folder(home).exists()


def test_the_adopting_logins_end_command_replaces_the_one_the_guardian_booted_with(
    home: Path, tmp_path: Path
) -> None:
    by_boot, by_login = tmp_path / "ended-by-boot", tmp_path / "ended-by-login"
    boot = BootGuardian("pool1", 3, ttl=0.5, initial=1.5, end_command=f"touch {by_boot}")
    subprocess.run(["bash", "-c", boot.command(home=f"'{home}'")], check=True, timeout=30,
                   env={"PATH": os.environ["PATH"], SOURCE_VARIABLE: packed()})
    booted = guardian_pid(home)

    login = guardian.start_command(str(folder(home)), ttl=0.5, initial=1.5, end_command=f"touch {by_login}")
    answer = subprocess.run(["sh", "-c", login], input=guardian.source(), capture_output=True, timeout=30)
    assert answer.stdout.decode().split() == ["running", str(booted)]

    # nobody renews: the lease lapses (once the login's claim has passed) and the guardian ends
    # the machine with the login's command
    assert wait_for(by_login.exists, timeout=CLAIM_HOLD + 15), (folder(home) / "guardian.log").read_text()
    assert not by_boot.exists()
    assert wait_for(lambda: not alive(booted))
