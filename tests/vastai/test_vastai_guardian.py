"""A client killed outright (SIGKILL) mid-task: its Vast instance destroys itself.

The client is a real process running a pool script against the fake API; the instance is a real
sshd. `ttl` seconds after the kill, the node's guardian (`skyward.guardian`) stops the pool's work
and runs the instance's end command, which destroys it through Vast's API with the instance's
own key, observed here as the fake's DELETE.
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
#: The issue's bound: the instance is destroyed within ttl + 30 s of the kill.
BOUND = TTL + 30

CLIENT = """
import getpass, sys, time
import skyward as sky

provider = sky.VastAI(server_url={url!r}, api_key={key!r}, ssh_user=getpass.getuser(), python=sys.executable)

@sky.function
def hold() -> None:
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, allocation="on-demand", ttl={ttl}, console=False, logging=False) as pool:
    hold() >> pool
"""


def test_an_instance_whose_client_was_killed_mid_task_destroys_itself(vast: FakeVast, tmp_path: Path) -> None:
    started = tmp_path / "task-started"
    script = tmp_path / "client.py"
    script.write_text(CLIENT.format(url=vast.url, key=API_KEY, started=str(started), ttl=TTL))
    with open(tmp_path / "client.log", "wb") as log:
        client = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=tmp_path)
    assert wait_until(started.exists, 120), (tmp_path / "client.log").read_text()
    (instance,) = vast.live

    client.send_signal(signal.SIGKILL)
    client.wait()
    killed = time.monotonic()
    assert wait_until(lambda: instance.id in vast.destroyed, BOUND)
    # ttl from the last renewal, which came at most one renewal interval before the kill
    assert time.monotonic() - killed >= TTL - renew_interval(TTL)
    assert vast.requests[-1][3] == f"Bearer {instance.container_api_key}"  # its own key, not the account's
    assert vast.live == []
