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

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from aws_cloud import FaultProxy, Machines, Network
from ssh_hosts import wait_until

from skyward.guardian import renew_interval

TTL = 2
BOOTSTRAP_TIMEOUT = 3
#: The issue's bound: the instance is terminated within ttl + 30 s of the kill (plus the
#: bootstrap timeout when the client never logged in).
BOUND = TTL + 30

CLIENT = """
import sys, time
import skyward as sky

provider = sky.AWS(endpoint_url={endpoint!r}, ip_lookup_url={lookup!r}, region="us-east-1",
                   subnet_id={subnet!r}, ami={ami!r}, use_private_ip=True, username={user!r},
                   python=sys.executable, ssh_port={port})
hold_bootstrap = sky.plugins.Plugin.create("hold").with_bootstrap(lambda cluster: {op!r})
options = sky.Options(bootstrap_timeout={bootstrap}, provision_timeout=600)

@sky.function
def hold() -> None:
    open({started!r}, "w").write("running")
    time.sleep(600)

with sky.Compute(provider=provider, plugins=[hold_bootstrap], options=options, ttl={ttl},
                 console=False, logging=False) as pool:
    hold() >> pool
"""


def start_client(
    folder: Path, faults: FaultProxy, network: Network, machines: Machines, *, op: str = "true",
    bootstrap_timeout: int = 300,
) -> tuple[subprocess.Popen[bytes], Path]:
    import getpass

    started = folder / "task-started"
    script = folder / "client.py"
    script.write_text(CLIENT.format(
        endpoint=faults.url, lookup=faults.ip_lookup_url, subnet=network.subnet_id, ami=network.ami,
        user=getpass.getuser(), port=machines.port, op=op, bootstrap=bootstrap_timeout,
        started=str(started), ttl=TTL,
    ))
    with open(folder / "client.log", "wb") as log:
        client = subprocess.Popen([sys.executable, str(script)], stdout=log, stderr=log, cwd=folder)
    return client, started


def kill(client: subprocess.Popen[bytes]) -> float:
    client.send_signal(signal.SIGKILL)
    client.wait()
    return time.monotonic()


def state(ec2: Any, instance: str) -> str:
    rows = ec2.describe_instances(InstanceIds=[instance])["Reservations"]
    return str(rows[0]["Instances"][0]["State"]["Name"])


def only_instance(machines: Machines) -> str:
    (instance,) = machines.homes
    return instance


def test_an_instance_whose_client_was_killed_mid_task_terminates_itself(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path, tmp_path: Path
) -> None:
    client, started = start_client(tmp_path, faults, network, machines)
    try:
        assert wait_until(started.exists, 180), (tmp_path / "client.log").read_text()
    finally:
        killed = kill(client)
    instance = only_instance(machines)

    assert wait_until(lambda: state(ec2, instance) == "terminated", BOUND)
    assert machines.powered_off == [instance]
    # ttl from the last renewal, which came at most one renewal interval before the kill
    assert time.monotonic() - killed >= TTL - renew_interval(TTL)


def test_an_instance_whose_client_was_killed_during_the_bootstrap_terminates_itself(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path, tmp_path: Path
) -> None:
    bootstrapping = tmp_path / "bootstrapping"
    hold = f"touch {bootstrapping}; sleep 600"
    client, started = start_client(tmp_path, faults, network, machines, op=hold)
    try:
        assert wait_until(bootstrapping.exists, 180), (tmp_path / "client.log").read_text()
    finally:
        kill(client)
    instance = only_instance(machines)

    assert wait_until(lambda: state(ec2, instance) == "terminated", BOUND)
    assert machines.powered_off == [instance]
    assert not started.exists()


def test_an_instance_whose_client_was_killed_before_its_first_login_terminates_itself(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path, tmp_path: Path
) -> None:
    machines.sshd_down = True  # the pool never logs in: only the boot guardian holds a lease
    client, _ = start_client(tmp_path, faults, network, machines, bootstrap_timeout=BOOTSTRAP_TIMEOUT)
    try:
        assert wait_until(lambda: bool(machines.boot_guardians), 180), (tmp_path / "client.log").read_text()
    finally:
        killed = kill(client)
    ((instance, answer),) = machines.boot_guardians.items()
    assert answer.startswith("started "), answer

    assert wait_until(lambda: state(ec2, instance) == "terminated", BOOTSTRAP_TIMEOUT + BOUND)
    assert machines.powered_off == [instance]
    assert time.monotonic() - killed <= BOOTSTRAP_TIMEOUT + BOUND
