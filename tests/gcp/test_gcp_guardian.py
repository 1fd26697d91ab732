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

import time
from pathlib import Path

from client_kill import BOOTSTRAP_TIMEOUT, TTL, Client, kill_before_first_login, kill_when, start_client
from fake_gcp import FakeGCP
from ssh_hosts import wait_until


def gcp_client(api: FakeGCP, tmp_path: Path, bootstrap: int) -> Client:
    provider = (
        f"sky.GCP(api_endpoint={api.url!r}, zone='us-central1-a', ssh_port={api.ssh_port}, "
        "ssh_cidr='127.0.0.1/32', ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap)


def test_a_vm_whose_client_was_killed_mid_task_deletes_itself(gcp_api: FakeGCP, tmp_path: Path) -> None:
    client = gcp_client(gcp_api, tmp_path, bootstrap=300)
    killed = kill_when(client, client.started.exists, 120)
    (vm,) = gcp_api.instances
    assert wait_until(lambda: vm in gcp_api.deleted, TTL + 30)
    assert time.monotonic() - killed >= TTL / 2, "deleted by the guardian's lapse, not at once"
    assert (vm, "instance/service-accounts/default/token") in gcp_api.metadata_asked
    gcp_api.firewalls.clear()  # what the killed client's teardown would have removed (`sky down` does)


def test_a_vm_whose_client_was_killed_before_its_first_login_deletes_itself(
    gcp_api: FakeGCP, tmp_path: Path
) -> None:
    gcp_api.sshd_down = True
    client = gcp_client(gcp_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    vm, _ = kill_before_first_login(client, gcp_api.boot_guardians, 120)
    assert wait_until(lambda: vm in gcp_api.deleted, BOOTSTRAP_TIMEOUT + TTL + 30), gcp_api.boot_guardians
    gcp_api.firewalls.clear()
