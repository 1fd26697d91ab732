"""A client killed outright (SIGKILL) mid-task or during the bootstrap: its RunPod pod deletes itself.

The client is a real process running a pool script against the fake API (tests/client_kill.py);
the pod is a real sshd. `ttl` seconds after the kill, the node's guardian (`skyward.guardian`)
stops the pool's work and runs the pod's end command, which deletes the pod through RunPod's API
by the pod's own id, observed here as the fake's DELETE.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from client_kill import BOUND, Client, assert_lease_ran_out, kill_when, start_client
from fake_runpod import FakeRunPod
from runpod_support import API_KEY
from ssh_hosts import wait_until


def runpod_client(runpod_api: FakeRunPod, folder: Path, *, op: str = "true") -> Client:
    provider = (
        f"sky.RunPod(api_url={runpod_api.rest_url!r}, graphql_url={runpod_api.graphql_url!r}, "
        f"api_key={API_KEY!r}, ssh_user=getpass.getuser(), python=sys.executable)"
    )
    return start_client(folder, provider, op=op)


def test_a_pod_whose_client_was_killed_mid_task_deletes_itself(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    client = runpod_client(runpod_api, tmp_path)
    killed = kill_when(client, client.started.exists, 120)
    (pod,) = runpod_api.pods

    assert wait_until(lambda: pod in runpod_api.deleted, BOUND)
    assert_lease_ran_out(killed)
    assert runpod_api.pods == {}


# The kill must come after the lease's first renewal, which the client sends on the guardian's
# answer: a machine that holds the environment already reaches the op before it may land, and a
# client killed then leaves the initial lease, bootstrap_timeout + ttl (docs/cost-safety.md). A
# machine that builds its environment runs seconds of bootstrap first.
@pytest.mark.cold_machines
def test_a_pod_whose_client_was_killed_during_the_bootstrap_deletes_itself(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    bootstrapping = tmp_path / "bootstrapping"
    client = runpod_client(runpod_api, tmp_path, op=f"touch {bootstrapping}; sleep 600")
    kill_when(client, bootstrapping.exists, 120)
    (pod,) = runpod_api.pods

    assert wait_until(lambda: pod in runpod_api.deleted, BOUND)
    assert runpod_api.pods == {}
    assert not client.started.exists()
