"""A client killed outright (SIGKILL): its Verda VM deletes itself through the API.

The client is a real process running a pool script against the fake API; the VM is a real sshd.
Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the VM's end
command; before the first login, the guardian the startup script started at boot does, once its
initial lease (bootstrap_timeout + ttl) lapses. Either way the command logs in with the
credentials the startup script kept and deletes the VM by its hostname, seen here as the fake's
delete. Nothing else ends the VM: the pool never reaches its exit.
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
from fake_verda import FakeVerda
from verda_support import CLIENT_ID, CLIENT_SECRET


def verda_client(api: FakeVerda, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.Verda(api_url={api.url!r}, ssh_port={api.ssh_port}, client_id={CLIENT_ID!r}, "
        f"client_secret={CLIENT_SECRET!r}, ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap)


def test_a_vm_whose_client_was_killed_mid_task_deletes_itself(verda_api: FakeVerda, tmp_path: Path) -> None:
    client = verda_client(verda_api, tmp_path, bootstrap=300)
    ends_itself_mid_task(client, lambda: verda_api.instances, lambda: verda_api.deleted)
    _clean_up(verda_api)


def test_a_vm_whose_client_was_killed_before_its_first_login_deletes_itself(
    verda_api: FakeVerda, tmp_path: Path
) -> None:
    verda_api.sshd_down = True
    client = verda_client(verda_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, verda_api.boot_guardians, lambda: verda_api.deleted)
    _clean_up(verda_api)


def _clean_up(api: FakeVerda) -> None:
    """What the killed client's teardown would have removed (`sky down` does it too)."""
    api.scripts.clear()
    api.ssh_keys.clear()
