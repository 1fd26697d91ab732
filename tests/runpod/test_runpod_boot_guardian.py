"""A client killed after creating its pod but before ever logging in: the pod deletes itself.

The pod's start command starts the node's guardian at boot (`skyward.guardian.boot`) with an
initial lease of bootstrap_timeout + ttl; nobody renews it, so when it lapses the guardian runs the
pod's end command, which deletes the pod through RunPod's API by `$RUNPOD_POD_ID`, observed here
as the fake's DELETE. The fake's pods never answer SSH (`sshd_down`), so no login ever happens.
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

TTL = 2
BOOTSTRAP_TIMEOUT = 3
#: The issue's bound: deleted within bootstrap_timeout + ttl + 30 s of the kill.
BOUND = BOOTSTRAP_TIMEOUT + TTL + 30

CLIENT = """
import getpass, sys
import skyward as sky

provider = sky.RunPod(api_url={rest!r}, graphql_url={graphql!r}, api_key={key!r},
                      ssh_user=getpass.getuser(), python=sys.executable)
options = sky.Options(bootstrap_timeout={bootstrap}, provision_timeout=600)

with sky.Compute(provider=provider, ttl={ttl}, options=options, console=False, logging=False) as pool:
    pass
"""


def test_a_pod_whose_client_was_killed_before_its_first_login_deletes_itself(
    runpod_api: FakeRunPod, tmp_path: Path
) -> None:
    runpod_api.sshd_down = True
    script = tmp_path / "client.py"
    script.write_text(CLIENT.format(
        rest=runpod_api.rest_url, graphql=runpod_api.graphql_url, key=API_KEY, ttl=TTL,
        bootstrap=BOOTSTRAP_TIMEOUT,
    ))
    with open(tmp_path / "client.log", "wb") as log:
        client = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=tmp_path)
    try:
        assert wait_until(lambda: bool(runpod_api.boot_guardians), 120), (tmp_path / "client.log").read_text()
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait()
    killed = time.monotonic()
    ((pod, answer),) = runpod_api.boot_guardians.items()
    assert answer.startswith("started "), answer

    assert wait_until(lambda: pod in runpod_api.deleted, BOUND), runpod_api.boot_guardians
    assert time.monotonic() - killed <= BOUND
    assert runpod_api.pods == {}
