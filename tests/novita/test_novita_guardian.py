"""A client killed outright (SIGKILL): its Novita instance deletes itself through the API.

The client is a real process running a pool script against the fake API; the instance is a real
sshd. Mid-task, `ttl` seconds after the kill, the node's guardian runs the instance's end command
(curl, by the instance's id); before the first login, the guardian the start script started at
boot does, once its initial lease (bootstrap_timeout + ttl) lapses (python3, by the instance's
name). Both use the key the start script kept, and are seen here as the fake's delete.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from fake_novita import FakeNovita
from novita_support import API_KEY
from ssh_hosts import wait_until

TTL = 2
BOOTSTRAP_TIMEOUT = 3

CLIENT = """
import getpass, sys, time
import skyward as sky

provider = sky.Novita(api_url={url!r}, api_key={key!r}, ssh_user=getpass.getuser(), python=sys.executable)
options = sky.Options(bootstrap_timeout={bootstrap}, provision_timeout=600)

@sky.function
def hold() -> None:
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, accelerator="RTX_4090", ttl={ttl}, options=options,
                 console=False, logging=False) as pool:
    hold() >> pool
"""


def _client(api: FakeNovita, tmp_path: Path, bootstrap: float) -> tuple[subprocess.Popen[bytes], Path]:
    started = tmp_path / "task-started"
    script = tmp_path / "client.py"
    script.write_text(
        CLIENT.format(url=api.url, key=API_KEY, started=str(started), ttl=TTL, bootstrap=bootstrap)
    )
    with open(tmp_path / "client.log", "wb") as log:
        client = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=tmp_path)
    return client, started


def test_an_instance_whose_client_was_killed_mid_task_deletes_itself(
    novita_api: FakeNovita, tmp_path: Path
) -> None:
    client, started = _client(novita_api, tmp_path, bootstrap=300)
    try:
        assert wait_until(started.exists, 120), (tmp_path / "client.log").read_text()
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    (instance,) = novita_api.instances
    killed = time.monotonic()
    assert wait_until(lambda: instance in novita_api.deleted, TTL + 30)
    assert time.monotonic() - killed >= TTL / 2, "deleted by the guardian's lapse, not at once"


def test_an_instance_whose_client_was_killed_before_its_first_login_deletes_itself(
    novita_api: FakeNovita, tmp_path: Path
) -> None:
    novita_api.sshd_down = True
    client, _ = _client(novita_api, tmp_path, bootstrap=BOOTSTRAP_TIMEOUT)
    try:
        assert wait_until(lambda: bool(novita_api.boot_guardians), 120), (tmp_path / "client.log").read_text()
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    ((instance, answer),) = novita_api.boot_guardians.items()
    assert answer.startswith("started "), answer
    assert wait_until(lambda: instance in novita_api.deleted, BOOTSTRAP_TIMEOUT + TTL + 30)
