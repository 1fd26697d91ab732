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

from pathlib import Path

from client_kill import (
    BOOTSTRAP_TIMEOUT,
    Client,
    ends_itself_before_first_login,
    ends_itself_mid_task,
    start_client,
)
from fake_jarvis import FakeJarvis
from jarvis_support import API_KEY


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
    ends_itself_mid_task(client, lambda: jarvis_api.instances, lambda: jarvis_api.destroyed)


def test_an_instance_whose_client_was_killed_before_its_first_login_destroys_itself(
    jarvis_api: FakeJarvis, tmp_path: Path
) -> None:
    jarvis_api.sshd_down = True
    client = jarvis_client(jarvis_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, jarvis_api.boot_guardians, lambda: jarvis_api.destroyed)
    jarvis_api.scripts.clear()  # the killed client's script: what `sky down` deletes
