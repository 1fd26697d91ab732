"""A client killed outright (SIGKILL): its Compute Engine VM deletes itself.

The client is a real process running a pool script against the fake API; the VM is a real sshd
with a metadata server of its own. Mid-task, `ttl` seconds after the kill, the node's guardian
(`skyward.guardian`) runs the VM's end command; before the first login, the guardian the startup
script started at boot does, once its initial lease (bootstrap_timeout + ttl) lapses. Either way
the command asks the VM's metadata server for its name, zone, project and a token of its service
account, and deletes the VM with that token: seen here as the fake's delete, authorised by a
token the metadata server handed out (no credential of the client's is on the machine).
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
from fake_gcp import FakeGCP


def gcp_client(api: FakeGCP, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.GCP(api_endpoint={api.url!r}, zone='us-central1-a', ssh_port={api.ssh_port}, "
        "ssh_cidr='127.0.0.1/32', ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap)


def test_a_vm_whose_client_was_killed_mid_task_deletes_itself(gcp_api: FakeGCP, tmp_path: Path) -> None:
    client = gcp_client(gcp_api, tmp_path, bootstrap=300)
    vm = ends_itself_mid_task(client, lambda: gcp_api.instances, lambda: gcp_api.deleted)
    assert (vm, "instance/service-accounts/default/token") in gcp_api.metadata_asked
    gcp_api.firewalls.clear()  # what the killed client's teardown would have removed (`sky down` does)


def test_a_vm_whose_client_was_killed_before_its_first_login_deletes_itself(
    gcp_api: FakeGCP, tmp_path: Path
) -> None:
    gcp_api.sshd_down = True
    client = gcp_client(gcp_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, gcp_api.boot_guardians, lambda: gcp_api.deleted)
    gcp_api.firewalls.clear()
