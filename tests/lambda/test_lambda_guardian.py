"""A client killed outright (SIGKILL): its Lambda VM terminates itself through the API.

The client is a real process running a pool script against the fake API; the VM is a real sshd.
Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the VM's end
command; before the first login, the guardian the user data started at boot does, once its
initial lease (bootstrap_timeout + ttl) lapses. Either way the command calls Lambda's API with the
key the user data kept and terminates the VM by its name (and id, once known), seen here as the
fake's terminate. Nothing else ends the VM: the pool never reaches its exit.
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
from fake_lambda import FakeLambda
from lambda_support import API_KEY, GUARDIAN_KEY


def lambda_client(api: FakeLambda, tmp_path: Path, bootstrap: int, **keys: str) -> Client:
    extra = "".join(f", {name}={value!r}" for name, value in keys.items())
    provider = (
        f"sky.LambdaCloud(api_url={api.url!r}, ssh_port={api.ssh_port}, api_key={API_KEY!r}{extra}, "
        "ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(tmp_path, provider, bootstrap_timeout=bootstrap, accelerator="H100")


def test_a_vm_whose_client_was_killed_mid_task_terminates_itself_with_the_guardians_key(
    lambda_api: FakeLambda, tmp_path: Path
) -> None:
    lambda_api.other_keys = {GUARDIAN_KEY}
    client = lambda_client(lambda_api, tmp_path, bootstrap=300, guardian_api_key=GUARDIAN_KEY)
    ends_itself_mid_task(client, lambda: lambda_api.instances, lambda: lambda_api.terminated)
    assert lambda_api.keys_used[-1] == GUARDIAN_KEY, "the VM called with its own key"
    (launch,) = lambda_api.launches
    assert GUARDIAN_KEY in launch["user_data"] and API_KEY not in launch["user_data"], "never the client's"
    lambda_api.ssh_keys.clear()  # what the killed client's teardown would have removed


def test_a_vm_whose_client_was_killed_before_its_first_login_terminates_itself(
    lambda_api: FakeLambda, tmp_path: Path
) -> None:
    lambda_api.sshd_down = True
    client = lambda_client(lambda_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    ends_itself_before_first_login(client, lambda_api.boot_guardians, lambda: lambda_api.terminated)
    lambda_api.ssh_keys.clear()
