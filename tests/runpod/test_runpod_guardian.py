"""A client killed outright (SIGKILL) mid-task or during the bootstrap: its RunPod pod deletes itself.

The client is a real process running a pool script against the fake API; the pod is a real sshd.
`ttl` seconds after the kill, the node's guardian (`skyward.guardian`) stops the pool's work and
runs the pod's end command, which deletes the pod through RunPod's API by the pod's own id,
observed here as the fake's DELETE.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from fake_runpod import FakeRunPod
from runpod_support import API_KEY
from ssh_hosts import wait_until

from skyward.guardian import renew_interval

TTL = 2
#: The issue's bound: the pod is deleted within ttl + 30 s of the kill.
BOUND = TTL + 30

CLIENT = """
import getpass, sys, time
import skyward as sky

provider = sky.RunPod(api_url={rest!r}, graphql_url={graphql!r}, api_key={key!r},
                      ssh_user=getpass.getuser(), python=sys.executable)
hold_bootstrap = sky.plugins.Plugin.create("hold").with_bootstrap(lambda cluster: {op!r})

@sky.function
def hold() -> None:
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, plugins=[hold_bootstrap], ttl={ttl}, console=False,
                 logging=False) as pool:
    hold() >> pool
"""


def start_client(
    runpod_api: FakeRunPod, folder: Path, *, op: str = "true"
) -> tuple[subprocess.Popen[bytes], Path]:
    started = folder / "task-started"
    script = folder / "client.py"
    script.write_text(CLIENT.format(
        rest=runpod_api.rest_url, graphql=runpod_api.graphql_url, key=API_KEY, op=op, started=str(started),
        ttl=TTL,
    ))
    with open(folder / "client.log", "wb") as log:
        client = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=folder)
    return client, started


def kill(client: subprocess.Popen[bytes]) -> float:
    client.send_signal(signal.SIGKILL)
    client.wait()
    return time.monotonic()


def test_a_pod_whose_client_was_killed_mid_task_deletes_itself(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    client, started = start_client(runpod_api, tmp_path)
    try:
        assert wait_until(started.exists, 120), (tmp_path / "client.log").read_text()
    finally:
        killed = kill(client)
    (pod,) = runpod_api.pods

    assert wait_until(lambda: pod in runpod_api.deleted, BOUND)
    # ttl from the last renewal, which came at most one renewal interval before the kill
    assert time.monotonic() - killed >= TTL - renew_interval(TTL)
    assert runpod_api.pods == {}


def test_a_pod_whose_client_was_killed_during_the_bootstrap_deletes_itself(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    bootstrapping = tmp_path / "bootstrapping"
    client, started = start_client(runpod_api, tmp_path, op=f"touch {bootstrapping}; sleep 600")
    try:
        assert wait_until(bootstrapping.exists, 120), (tmp_path / "client.log").read_text()
    finally:
        kill(client)
    (pod,) = runpod_api.pods

    assert wait_until(lambda: pod in runpod_api.deleted, BOUND)
    assert runpod_api.pods == {}
    assert not started.exists()
