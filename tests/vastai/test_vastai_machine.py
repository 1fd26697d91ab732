"""What a Vast container runs: the real onstart script in a sandbox, and the shutdown command."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path

from vast_server import FakeVast

from skyward.providers.cloud import HOST_KEY_VARIABLE, MachineAccess
from skyward_vastai.machine import ONSTART_LIMIT, onstart_script, shutdown_command

LOGIN_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGxvZ2luLWtleS1vZi10aGUtcG9vbC0wMTIzNDU2Nzg5 skyward pool"


def _clean_env(**extra: str) -> dict[str, str]:
    """This machine's environment minus proxies, so curl goes straight to the loopback fake."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return {**env, **extra}


def test_the_onstart_script_installs_exactly_our_host_key_and_the_pools_login_key(tmp_path: Path) -> None:
    access = MachineAccess.create(LOGIN_KEY)
    ssh_dir, home = tmp_path / "etc-ssh", tmp_path / "root"
    ssh_dir.mkdir()
    for name in ("ssh_host_rsa_key", "ssh_host_rsa_key.pub", "ssh_host_ed25519_key", "sshd_config"):
        (ssh_dir / name).write_text("the image's own\n")
    script = onstart_script(
        access, ssh_dir=str(ssh_dir), home=str(home), identity_file=str(tmp_path / "vast.env"),
        sshd_pid_file=str(tmp_path / "sshd.pid"),
    )
    assert len(script) < ONSTART_LIMIT
    env = _clean_env(**{HOST_KEY_VARIABLE: access.host_key_b64})
    subprocess.run(["bash", "-c", script], check=True, env=env)
    assert sorted(p.name for p in ssh_dir.iterdir()) == [
        "ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "sshd_config",
    ]
    assert (ssh_dir / "ssh_host_ed25519_key").read_text() == access.host_key
    assert stat.S_IMODE((ssh_dir / "ssh_host_ed25519_key").stat().st_mode) == 0o600
    assert (ssh_dir / "ssh_host_ed25519_key.pub").read_text().strip() == access.host_key_public
    assert (home / ".ssh" / "authorized_keys").read_text().splitlines() == [LOGIN_KEY]


def test_the_onstart_script_reloads_the_running_sshd(tmp_path: Path) -> None:
    access = MachineAccess.create(LOGIN_KEY)
    sshd = subprocess.Popen(["sleep", "30"])  # stands for the sshd Vast started; SIGHUP ends it
    (tmp_path / "sshd.pid").write_text(f"{sshd.pid}\n")
    script = onstart_script(
        access, ssh_dir=str(tmp_path / "ssh"), home=str(tmp_path / "root"),
        identity_file=str(tmp_path / "vast.env"), sshd_pid_file=str(tmp_path / "sshd.pid"),
    )
    env = _clean_env(**{HOST_KEY_VARIABLE: access.host_key_b64})
    subprocess.run(["bash", "-c", script], check=True, env=env)
    assert sshd.wait(5) == -signal.SIGHUP


def test_the_onstart_script_keeps_the_instance_identity_for_root_only(tmp_path: Path) -> None:
    access = MachineAccess.create(LOGIN_KEY)
    identity = tmp_path / "vast.env"
    script = onstart_script(
        access, ssh_dir=str(tmp_path / "ssh"), home=str(tmp_path / "root"), identity_file=str(identity),
        sshd_pid_file=str(tmp_path / "none.pid"),
    )
    env = _clean_env(
        **{HOST_KEY_VARIABLE: access.host_key_b64, "CONTAINER_ID": "4242", "CONTAINER_API_KEY": "ck-1"}
    )
    subprocess.run(["bash", "-c", script], check=True, env=env)
    assert identity.read_text().splitlines() == ["CONTAINER_ID=4242", "CONTAINER_API_KEY=ck-1"]
    assert stat.S_IMODE(identity.stat().st_mode) == 0o600


def test_a_silent_workers_instance_destroys_itself_with_its_own_container_key(
    vast: FakeVast, tmp_path: Path
) -> None:
    instance = vast.add_instance(1)
    identity = tmp_path / "vast.env"
    identity.write_text(f"CONTAINER_ID={instance.id}\nCONTAINER_API_KEY={instance.container_api_key}\n")
    command = shutdown_command(vast.url, identity_file=str(identity))
    assert "shutdown" not in command.split()
    subprocess.run(["bash", "-c", command], check=True, env=_clean_env(), capture_output=True, timeout=20)
    assert instance.id in vast.destroyed
    assert vast.requests[-1][3] == f"Bearer {instance.container_api_key}"
