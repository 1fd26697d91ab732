"""A client killed outright (SIGKILL): its Massed Compute machine terminates itself through the API.

The client is a real process running a pool script against the fake API; the machine is a real
sshd. Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the
machine's end command; before the first login, the guardian the startup command started at boot
does, once its initial lease (bootstrap_timeout + ttl) lapses. Either way the command reads the
key the startup command kept and terminates the machine by its name, seen here as the fake's
terminate. Nothing else ends the machine: the pool never reaches its exit.
"""

from __future__ import annotations

import time
from pathlib import Path

from client_kill import BOOTSTRAP_TIMEOUT, TTL, Client, kill_before_first_login, kill_when, start_client
from fake_massed import FakeMassed
from massed_support import API_KEY
from ssh_hosts import wait_until


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
    killed = kill_when(client, client.started.exists, 120)
    (machine,) = massed_api.instances
    assert wait_until(lambda: machine in massed_api.terminated, TTL + 30)
    assert time.monotonic() - killed >= TTL / 2, "terminated by the guardian's lapse, not at once"


def test_a_machine_whose_client_was_killed_before_its_first_login_terminates_itself(
    massed_api: FakeMassed, tmp_path: Path
) -> None:
    massed_api.sshd_down = True
    client = massed_client(massed_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    machine, _ = kill_before_first_login(client, massed_api.boot_guardians, 120)
    assert wait_until(lambda: machine in massed_api.terminated, BOOTSTRAP_TIMEOUT + TTL + 30), (
        massed_api.boot_guardians
    )
