"""A client killed outright (SIGKILL): its Vast instance destroys itself, whatever the client was doing.

The client is a real process running a pool script against the fake API; the instance is a real
sshd. When the lease lapses, `ttl` seconds after the client's last renewal (or
`bootstrap_timeout + ttl` after boot when the client never logged in: the onstart script's boot
guardian holds that first lease), the node's guardian (`skyward.guardian`) stops the pool's work
and runs the instance's end command, which destroys it through Vast's API with the instance's own
key, observed here as the fake's DELETE.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from client_kill import (
    BOOTSTRAP_TIMEOUT,
    BOUND,
    Client,
    assert_lease_ran_out,
    kill_before_first_login,
    kill_when,
    start_client,
)
from ssh_hosts import wait_until
from vast_server import FakeVast
from vast_support import API_KEY


def vast_client(vast: FakeVast, folder: Path, *, op: str = "true", bootstrap_timeout: int = 300) -> Client:
    provider = (
        f"sky.VastAI(server_url={vast.url!r}, api_key={API_KEY!r}, ssh_user=getpass.getuser(), "
        "python=sys.executable)"
    )
    return start_client(folder, provider, op=op, bootstrap_timeout=bootstrap_timeout, allocation="on-demand")


def test_an_instance_whose_client_was_killed_mid_task_destroys_itself(vast: FakeVast, tmp_path: Path) -> None:
    client = vast_client(vast, tmp_path)
    killed = kill_when(client, client.started.exists, 120)
    (instance,) = vast.live

    assert wait_until(lambda: instance.id in vast.destroyed, BOUND)
    assert_lease_ran_out(killed)
    assert vast.requests[-1][3] == f"Bearer {instance.container_api_key}"  # its own key, not the account's
    assert vast.live == []


# The kill must come after the lease's first renewal, which the client sends on the guardian's
# answer: a machine that holds the environment already reaches the op before it may land, and a
# client killed then leaves the initial lease, bootstrap_timeout + ttl (docs/cost-safety.md). A
# machine that builds its environment runs seconds of bootstrap first.
@pytest.mark.cold_machines
def test_an_instance_whose_client_was_killed_during_the_bootstrap_destroys_itself(
    vast: FakeVast, tmp_path: Path
) -> None:
    bootstrapping = tmp_path / "bootstrapping"
    client = vast_client(vast, tmp_path, op=f"touch {bootstrapping}; sleep 600")
    kill_when(client, bootstrapping.exists, 120)
    (instance,) = vast.live

    assert wait_until(lambda: instance.id in vast.destroyed, BOUND)
    assert vast.live == []
    assert not client.started.exists()


def test_an_instance_whose_client_was_killed_before_its_first_login_destroys_itself(
    vast: FakeVast, tmp_path: Path
) -> None:
    vast.sshd_down = True  # the pool never logs in: only the boot guardian holds a lease
    client = vast_client(vast, tmp_path, bootstrap_timeout=BOOTSTRAP_TIMEOUT)
    instance_id, killed = kill_before_first_login(client, vast.boot_guardians, 120)

    assert wait_until(lambda: instance_id in vast.destroyed, BOOTSTRAP_TIMEOUT + BOUND)
    assert time.monotonic() - killed <= BOOTSTRAP_TIMEOUT + BOUND
    assert vast.live == []
