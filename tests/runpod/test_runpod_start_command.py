"""The pod's real start command, run with bash in a sandbox standing for the container's root."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from skyward.providers.cloud import MachineAccess
from skyward_runpod.pods import start_command


def stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_the_start_command_installs_exactly_our_host_key_and_login_key_then_starts_sshd_with_it(
    tmp_path: Path,
) -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIlogin pool")
    ssh_dir, home, bin_dir = tmp_path / "etc-ssh", tmp_path / "root", tmp_path / "bin"
    ssh_dir.mkdir()
    bin_dir.mkdir()
    (ssh_dir / "ssh_host_rsa_key").write_text("the image's own key")
    (ssh_dir / "ssh_host_rsa_key.pub").write_text("ssh-rsa AAAA image")
    # sshd and the keep-alive are stubs that record how they were called.
    stub(bin_dir, "sshd", f'echo "$@" > {tmp_path}/sshd-args')
    stub(bin_dir, "sleep", f'echo "$@" > {tmp_path}/sleep-args')
    script = start_command(access, ssh_dir=str(ssh_dir), home=str(home))
    subprocess.run(
        ["bash", "-c", script], check=True, timeout=30,
        env={
            "SKYWARD_SSH_HOST_KEY": access.host_key_b64, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "RUNPOD_API_KEY": "rpa_pod_scoped_key",
        },
    )
    assert sorted(p.name for p in ssh_dir.iterdir()) == ["ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"]
    assert (ssh_dir / "ssh_host_ed25519_key").read_text() == access.host_key
    assert (ssh_dir / "ssh_host_ed25519_key.pub").read_text().strip() == access.host_key_public
    assert (home / ".ssh" / "authorized_keys").read_text() == access.login_key + "\n"
    assert (tmp_path / "sshd-args").read_text().split() == ["-h", str(ssh_dir / "ssh_host_ed25519_key")]
    assert (tmp_path / "sleep-args").read_text().split() == ["infinity"]
    identity = home / ".skyward-runpod.env"  # the pod's own key, for the guardian's end command
    assert identity.read_text() == "RUNPOD_API_KEY=rpa_pod_scoped_key\n"
    assert stat.S_IMODE(identity.stat().st_mode) == 0o600


def test_the_start_command_stops_before_sshd_when_the_host_key_is_missing(tmp_path: Path) -> None:
    access = MachineAccess.create("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIlogin pool")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub(bin_dir, "sshd", f"touch {tmp_path}/sshd-ran")
    script = start_command(access, ssh_dir=str(tmp_path / "etc-ssh"), home=str(tmp_path / "root"))
    result = subprocess.run(
        ["bash", "-c", script], timeout=30, capture_output=True, text=True,
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},  # no SKYWARD_SSH_HOST_KEY
    )
    assert result.returncode != 0 and "SKYWARD_SSH_HOST_KEY is not set" in result.stderr
    assert not (tmp_path / "sshd-ran").exists()
