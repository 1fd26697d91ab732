"""A client killed outright (SIGKILL): its Hyperstack VM deletes itself through the API.

The client is a real process running a pool script against the fake API; the VM is a real sshd.
Mid-task, `ttl` seconds after the kill, the node's guardian runs the VM's end command; before the
first login, the guardian the user data started at boot does, once its initial lease
(bootstrap_timeout + ttl) lapses. Either way the command finds the VM by its name and deletes it
with the API key the user data kept, seen here as the fake's delete. Nothing else ends the VM:
the pool never reaches its exit.
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
from fake_infrahub import FakeInfrahub
from hyperstack_support import API_KEY


def hyperstack_client(api: FakeInfrahub, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.Hyperstack(api_url={api.url!r}, ssh_port={api.ssh_port}, api_key={API_KEY!r}, "
        "ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap, accelerator="L40")


def test_a_vm_whose_client_was_killed_mid_task_deletes_itself(
    hyperstack_api: FakeInfrahub, tmp_path: Path
) -> None:
    client = hyperstack_client(hyperstack_api, tmp_path, bootstrap=300)
    ends_itself_mid_task(client, lambda: hyperstack_api.vms, lambda: hyperstack_api.deleted_vms)
    hyperstack_api.keypairs.clear()  # what the killed client's release would have deleted (`sky down` does)


def test_a_vm_whose_client_was_killed_before_its_first_login_deletes_itself(
    hyperstack_api: FakeInfrahub, tmp_path: Path
) -> None:
    hyperstack_api.sshd_down = True
    client = hyperstack_client(hyperstack_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    boot_lines = hyperstack_api.boot_guardians  # keyed by the VM's id as text
    ends_itself_before_first_login(client, boot_lines, lambda: [str(vm) for vm in hyperstack_api.deleted_vms])
    hyperstack_api.keypairs.clear()
