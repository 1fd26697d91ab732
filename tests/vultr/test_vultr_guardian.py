"""A client killed outright (SIGKILL): its Vultr instance deletes itself through the API.

The client is a real process running a pool script against the fake API; the instance is a real
sshd. Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the
instance's end command; before the first login, the guardian the user data started at boot does,
once its initial lease (bootstrap_timeout + ttl) lapses. Either way the command finds the instance
by its label and tag with the API key the user data kept and deletes it, seen here as the fake's
delete. Nothing else ends the instance: the pool never reaches its exit.
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
from fake_vultr import FakeVultr
from vultr_support import API_KEY


def vultr_client(api: FakeVultr, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.Vultr(api_url={api.url!r}, ssh_port={api.ssh_port}, api_key={API_KEY!r}, "
        f"ip_lookup_url={api.echo_url!r}, ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap, accelerator="A100")


def test_an_instance_whose_client_was_killed_mid_task_deletes_itself(
    vultr_api: FakeVultr, tmp_path: Path
) -> None:
    client = vultr_client(vultr_api, tmp_path, bootstrap=300)
    ends_itself_mid_task(client, lambda: vultr_api.instances, lambda: vultr_api.deleted)
    _clean_up(vultr_api)


def test_an_instance_whose_client_was_killed_before_its_first_login_deletes_itself(
    vultr_api: FakeVultr, tmp_path: Path
) -> None:
    vultr_api.sshd_down = True
    client = vultr_client(vultr_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, vultr_api.boot_guardians, lambda: vultr_api.deleted)
    _clean_up(vultr_api)


def _clean_up(api: FakeVultr) -> None:
    """What the killed client's teardown would have removed (`sky down` does it too)."""
    api.firewalls.clear()
    api.ssh_keys.clear()
