"""A client killed outright (SIGKILL): its EC2 instances end themselves, whatever the client was doing.

The client is a real process running a pool script against moto; each instance is a real sshd
that boots as EC2 would (conftest.py's `machines`: cloud-init's `runcmd` starts the boot guardian,
`sudo shutdown -h now` powers the machine off, and EC2 applies the instance's
`InstanceInitiatedShutdownBehavior`, which the provider sets to `terminate`). When the lease
lapses, `ttl` seconds after the client's last renewal (or `bootstrap_timeout + ttl` after boot
when the client never logged in), the node's guardian stops the pool's work and runs the end
command; the instance is then terminated, as moto's API reports it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from aws_cloud import FaultProxy, Machines, Network
from client_kill import (
    BOOTSTRAP_TIMEOUT,
    BOUND,
    Client,
    assert_lease_ran_out,
    kill_before_first_login,
    kill_when,
    start_client,
)


def aws_client(
    folder: Path, faults: FaultProxy, network: Network, machines: Machines, *, op: str = "true",
    bootstrap_timeout: int = 300,
) -> Client:
    provider = (
        f"sky.AWS(endpoint_url={faults.url!r}, ip_lookup_url={faults.ip_lookup_url!r}, region='us-east-1', "
        f"subnet_id={network.subnet_id!r}, ami={network.ami!r}, use_private_ip=True, "
        f"username=getpass.getuser(), python=sys.executable, ssh_port={machines.port})"
    )
    return start_client(folder, provider, op=op, bootstrap_timeout=bootstrap_timeout)


def state(ec2: Any, instance: str) -> str:
    rows = ec2.describe_instances(InstanceIds=[instance])["Reservations"]
    return str(rows[0]["Instances"][0]["State"]["Name"])


def only_instance(machines: Machines) -> str:
    (instance,) = machines.homes
    return instance


def test_an_instance_whose_client_was_killed_mid_task_terminates_itself(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path, tmp_path: Path
) -> None:
    client = aws_client(tmp_path, faults, network, machines)
    killed = kill_when(client, client.started.exists, 180)
    instance = only_instance(machines)

    assert machines.ended(instance).wait(BOUND)
    assert state(ec2, instance) == "terminated"
    assert machines.powered_off == [instance]
    assert_lease_ran_out(killed)


# The kill must come after the lease's first renewal, which the client sends on the guardian's
# answer: a machine that holds the environment already reaches the op before it may land, and a
# client killed then leaves the initial lease, bootstrap_timeout + ttl (docs/cost-safety.md). A
# machine that builds its environment runs seconds of bootstrap first.
@pytest.mark.cold_machines
def test_an_instance_whose_client_was_killed_during_the_bootstrap_terminates_itself(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path, tmp_path: Path
) -> None:
    bootstrapping = tmp_path / "bootstrapping"
    hold = f"touch {bootstrapping}; sleep 600"
    client = aws_client(tmp_path, faults, network, machines, op=hold)
    kill_when(client, bootstrapping.exists, 180)
    instance = only_instance(machines)

    assert machines.ended(instance).wait(BOUND)
    assert state(ec2, instance) == "terminated"
    assert machines.powered_off == [instance]
    assert not client.started.exists()


def test_an_instance_whose_client_was_killed_before_its_first_login_terminates_itself(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path, tmp_path: Path
) -> None:
    machines.sshd_down = True  # the pool never logs in: only the boot guardian holds a lease
    client = aws_client(tmp_path, faults, network, machines, bootstrap_timeout=BOOTSTRAP_TIMEOUT)
    instance, killed = kill_before_first_login(client, machines.boot_guardians, 180)

    assert machines.ended(instance).wait(BOOTSTRAP_TIMEOUT + BOUND)
    assert state(ec2, instance) == "terminated"
    assert machines.powered_off == [instance]
    assert time.monotonic() - killed <= BOOTSTRAP_TIMEOUT + BOUND
