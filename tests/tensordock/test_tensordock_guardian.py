"""A client killed outright (SIGKILL): its TensorDock VM deletes itself through the API.

The client is a real process running a pool script against the fake marketplace; the VM is a real
sshd behind its forwarded port. Mid-task, `ttl` seconds after the kill, the node's guardian
(`skyward.guardian`) runs the VM's end command; before the first login, the guardian the
cloud-init script started at boot does, once its initial lease (bootstrap_timeout + ttl) lapses.
Either way the command reads the pair the script kept and deletes the VM by its name, seen here
as the fake's delete. Nothing else ends the VM: the pool never reaches its exit.
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
from fake_tensordock import FakeTensorDock
from tensordock_support import API_KEY, API_TOKEN


def tensordock_client(api: FakeTensorDock, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.TensorDock(api_url={api.url!r}, api_key={API_KEY!r}, api_token={API_TOKEN!r}, "
        f"ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap, accelerator="RTX_4090")


def test_a_vm_whose_client_was_killed_mid_task_deletes_itself(
    tensordock_api: FakeTensorDock, tmp_path: Path
) -> None:
    client = tensordock_client(tensordock_api, tmp_path, bootstrap=300)
    ends_itself_mid_task(client, lambda: tensordock_api.vms, lambda: tensordock_api.deleted)


def test_a_vm_whose_client_was_killed_before_its_first_login_deletes_itself(
    tensordock_api: FakeTensorDock, tmp_path: Path
) -> None:
    tensordock_api.sshd_down = True
    client = tensordock_client(tensordock_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, tensordock_api.boot_guardians, lambda: tensordock_api.deleted)
