"""A client killed outright (SIGKILL): its Vast instance destroys itself, whatever the client was doing.

The client is a real process running a pool script against the fake API; the instance is a real
sshd. When the lease lapses, `ttl` seconds after the client's last renewal (or
`bootstrap_timeout + ttl` after boot when the client never logged in: the onstart script's boot
guardian holds that first lease), the node's guardian (`skyward.guardian`) stops the pool's work
and runs the instance's end command, which destroys it through Vast's API with the instance's own
key, observed here as the fake's DELETE.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from ssh_hosts import wait_until
from vast_server import FakeVast
from vast_support import API_KEY

from skyward.guardian import renew_interval

TTL = 2
BOOTSTRAP_TIMEOUT = 3
#: The issue's bound: the instance is destroyed within ttl + 30 s of the kill (plus the bootstrap
#: timeout when the client never logged in).
BOUND = TTL + 30

CLIENT = """
import getpass, sys, time
import skyward as sky

provider = sky.VastAI(server_url={url!r}, api_key={key!r}, ssh_user=getpass.getuser(), python=sys.executable)
hold_bootstrap = sky.plugins.Plugin.create("hold").with_bootstrap(lambda cluster: {op!r})
options = sky.Options(bootstrap_timeout={bootstrap}, provision_timeout=600)

@sky.function
def hold() -> None:
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, allocation="on-demand", plugins=[hold_bootstrap], options=options,
                 ttl={ttl}, console=False, logging=False) as pool:
    hold() >> pool
"""


def start_client(
    vast: FakeVast, folder: Path, *, op: str = "true", bootstrap_timeout: int = 300
) -> tuple[subprocess.Popen[bytes], Path]:
    started = folder / "task-started"
    script = folder / "client.py"
    script.write_text(CLIENT.format(
        url=vast.url, key=API_KEY, op=op, bootstrap=bootstrap_timeout, started=str(started), ttl=TTL,
    ))
    with open(folder / "client.log", "wb") as log:
        client = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=folder)
    return client, started


def kill(client: subprocess.Popen[bytes]) -> float:
    client.send_signal(signal.SIGKILL)
    client.wait()
    return time.monotonic()


def test_an_instance_whose_client_was_killed_mid_task_destroys_itself(vast: FakeVast, tmp_path: Path) -> None:
    client, started = start_client(vast, tmp_path)
    try:
        assert wait_until(started.exists, 120), (tmp_path / "client.log").read_text()
    finally:
        killed = kill(client)
    (instance,) = vast.live

    assert wait_until(lambda: instance.id in vast.destroyed, BOUND)
    # ttl from the last renewal, which came at most one renewal interval before the kill
    assert time.monotonic() - killed >= TTL - renew_interval(TTL)
    assert vast.requests[-1][3] == f"Bearer {instance.container_api_key}"  # its own key, not the account's
    assert vast.live == []


def test_an_instance_whose_client_was_killed_during_the_bootstrap_destroys_itself(
    vast: FakeVast, tmp_path: Path
) -> None:
    bootstrapping = tmp_path / "bootstrapping"
    client, started = start_client(vast, tmp_path, op=f"touch {bootstrapping}; sleep 600")
    try:
        assert wait_until(bootstrapping.exists, 120), (tmp_path / "client.log").read_text()
    finally:
        kill(client)
    (instance,) = vast.live

    assert wait_until(lambda: instance.id in vast.destroyed, BOUND)
    assert vast.live == []
    assert not started.exists()


def test_an_instance_whose_client_was_killed_before_its_first_login_destroys_itself(
    vast: FakeVast, tmp_path: Path
) -> None:
    vast.sshd_down = True  # the pool never logs in: only the boot guardian holds a lease
    client, _ = start_client(vast, tmp_path, bootstrap_timeout=BOOTSTRAP_TIMEOUT)
    try:
        assert wait_until(lambda: bool(vast.boot_guardians), 120), (tmp_path / "client.log").read_text()
    finally:
        killed = kill(client)
    ((instance_id, answer),) = vast.boot_guardians.items()
    assert answer.startswith("started "), answer

    assert wait_until(lambda: instance_id in vast.destroyed, BOOTSTRAP_TIMEOUT + BOUND)
    assert time.monotonic() - killed <= BOOTSTRAP_TIMEOUT + BOUND
    assert vast.live == []
