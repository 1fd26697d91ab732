"""A client killed outright (SIGKILL): its Novita instance deletes itself through the API.

The client is a real process running a pool script against the fake API; the instance is a real
sshd. Mid-task, `ttl` seconds after the kill, the node's guardian runs the instance's end command
(curl, by the instance's id); before the first login, the guardian the start script started at
boot does, once its initial lease (bootstrap_timeout + ttl) lapses (python3, by the instance's
name). Both use the key the start script kept, and are seen here as the fake's delete.
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
from fake_novita import FakeNovita
from novita_support import API_KEY


def novita_client(api: FakeNovita, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.Novita(api_url={api.url!r}, api_key={API_KEY!r}, ssh_user=getpass.getuser(), "
        "python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap, accelerator="RTX_4090")


def test_an_instance_whose_client_was_killed_mid_task_deletes_itself(
    novita_api: FakeNovita, tmp_path: Path
) -> None:
    client = novita_client(novita_api, tmp_path, bootstrap=300)
    ends_itself_mid_task(client, lambda: novita_api.instances, lambda: novita_api.deleted)


def test_an_instance_whose_client_was_killed_before_its_first_login_deletes_itself(
    novita_api: FakeNovita, tmp_path: Path
) -> None:
    novita_api.sshd_down = True
    client = novita_client(novita_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, novita_api.boot_guardians, lambda: novita_api.deleted)
