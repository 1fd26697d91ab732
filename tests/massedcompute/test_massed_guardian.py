"""A client killed outright (SIGKILL): its Massed Compute machine terminates itself through the API.

The client is a real process running a pool script against the fake API; the machine is a real
sshd. Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the
machine's end command; before the first login, the guardian the startup command started at boot
does, once its initial lease (bootstrap_timeout + ttl) lapses. Either way the command reads the
key the startup command kept and terminates the machine by its name, seen here as the fake's
terminate. Nothing else ends the machine: the pool never reaches its exit.
"""

from __future__ import annotations

from pathlib import Path

from client_kill import (
    BOOTSTRAP_TIMEOUT,
    Client,
    ends_itself_before_first_login,
    ends_itself_mid_task,
    start_client,
)
from fake_massed import FakeMassed
from massed_support import API_KEY


def massed_client(api: FakeMassed, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.MassedCompute(api_url={api.url!r}, ssh_port={api.ssh_port}, api_key={API_KEY!r}, "
        f"ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap, accelerator="L40")


def test_a_machine_whose_client_was_killed_mid_task_terminates_itself(
    massed_api: FakeMassed, tmp_path: Path
) -> None:
    client = massed_client(massed_api, tmp_path, bootstrap=300)
    ends_itself_mid_task(client, lambda: massed_api.instances, lambda: massed_api.terminated)


def test_a_machine_whose_client_was_killed_before_its_first_login_terminates_itself(
    massed_api: FakeMassed, tmp_path: Path
) -> None:
    massed_api.sshd_down = True
    client = massed_client(massed_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, massed_api.boot_guardians, lambda: massed_api.terminated)
