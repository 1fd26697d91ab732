"""A client killed outright (SIGKILL): its JarvisLabs instance destroys itself through the API.

The client is a real process running a pool script against the fake API; the instance is a real
sshd. Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the
instance's end command; before the first login, the guardian the startup script started at boot
does, once its initial lease (bootstrap_timeout + ttl) lapses. Either way the command reads the
key the startup script kept and destroys the instance by its name, seen here as the fake's
destroy. Nothing else ends the instance: the pool never reaches its exit. The startup script the
killed client uploaded is left on the account, for `sky down` (test_jarvis_sweep_cli).
"""

from __future__ import annotations

import time
from pathlib import Path

from client_kill import BOOTSTRAP_TIMEOUT, TTL, Client, kill_before_first_login, kill_when, start_client
from fake_jarvis import FakeJarvis
from jarvis_support import API_KEY
from ssh_hosts import wait_until


def jarvis_client(api: FakeJarvis, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.JarvisLabs(api_url={api.url!r}, api_key={API_KEY!r}, "
        f"ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap, accelerator="A100")


def test_an_instance_whose_client_was_killed_mid_task_destroys_itself(
    jarvis_api: FakeJarvis, tmp_path: Path
) -> None:
    client = jarvis_client(jarvis_api, tmp_path, bootstrap=300)
    killed = kill_when(client, client.started.exists, 120)
    (machine,) = jarvis_api.instances
    assert wait_until(lambda: machine in jarvis_api.destroyed, TTL + 30)
    assert time.monotonic() - killed >= TTL / 2, "destroyed by the guardian's lapse, not at once"


def test_an_instance_whose_client_was_killed_before_its_first_login_destroys_itself(
    jarvis_api: FakeJarvis, tmp_path: Path
) -> None:
    jarvis_api.sshd_down = True
    client = jarvis_client(jarvis_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    machine, _ = kill_before_first_login(client, jarvis_api.boot_guardians, 120)
    assert wait_until(lambda: machine in jarvis_api.destroyed, BOOTSTRAP_TIMEOUT + TTL + 30), (
        jarvis_api.boot_guardians
    )
    jarvis_api.scripts.clear()  # the killed client's script: what `sky down` deletes
