"""A client killed outright (SIGKILL): its Verda VM deletes itself through the API.

The client is a real process running a pool script against the fake API; the VM is a real sshd.
Mid-task, `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) runs the VM's end
command; before the first login, the guardian the startup script started at boot does, once its
initial lease (bootstrap_timeout + ttl) lapses. Either way the command logs in with the
credentials the startup script kept and deletes the VM by its hostname, seen here as the fake's
delete. Nothing else ends the VM: the pool never reaches its exit.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from fake_verda import FakeVerda
from ssh_hosts import wait_until
from verda_support import CLIENT_ID, CLIENT_SECRET

TTL = 2
BOOTSTRAP_TIMEOUT = 3

CLIENT = """
import getpass, sys, time
import skyward as sky

provider = sky.Verda(api_url={url!r}, ssh_port={port}, client_id={cid!r}, client_secret={secret!r},
                     ssh_user=getpass.getuser(), python=sys.executable)
options = sky.Options(bootstrap_timeout={bootstrap}, provision_timeout=600)

@sky.function
def hold() -> None:
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, ttl={ttl}, options=options, console=False, logging=False) as pool:
    hold() >> pool
"""


def _client(api: FakeVerda, tmp_path: Path, bootstrap: float) -> tuple[subprocess.Popen[bytes], Path]:
    started = tmp_path / "task-started"
    script = tmp_path / "client.py"
    script.write_text(CLIENT.format(
        url=api.url, port=api.ssh_port, cid=CLIENT_ID, secret=CLIENT_SECRET, started=str(started),
        ttl=TTL, bootstrap=bootstrap,
    ))
    with open(tmp_path / "client.log", "wb") as log:
        client = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=tmp_path)
    return client, started


def test_a_vm_whose_client_was_killed_mid_task_deletes_itself(verda_api: FakeVerda, tmp_path: Path) -> None:
    client, started = _client(verda_api, tmp_path, bootstrap=300)
    try:
        assert wait_until(started.exists, 120), (tmp_path / "client.log").read_text()
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    (vm,) = verda_api.instances
    killed = time.monotonic()
    assert wait_until(lambda: vm in verda_api.deleted, TTL + 30)
    assert time.monotonic() - killed >= TTL / 2, "deleted by the guardian's lapse, not at once"
    _clean_up(verda_api)


def test_a_vm_whose_client_was_killed_before_its_first_login_deletes_itself(
    verda_api: FakeVerda, tmp_path: Path
) -> None:
    verda_api.sshd_down = True
    client, _ = _client(verda_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    try:
        assert wait_until(lambda: bool(verda_api.boot_guardians), 120), (tmp_path / "client.log").read_text()
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    ((vm, answer),) = verda_api.boot_guardians.items()
    assert answer.startswith("started "), answer
    assert wait_until(lambda: vm in verda_api.deleted, BOOTSTRAP_TIMEOUT + TTL + 30), verda_api.boot_guardians
    _clean_up(verda_api)


def _clean_up(api: FakeVerda) -> None:
    """What the killed client's teardown would have removed (`sky down` does it too)."""
    api.scripts.clear()
    api.ssh_keys.clear()
