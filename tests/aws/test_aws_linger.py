"""Lingering EC2 machines (`Options(linger=True)`) on moto, each instance a real sshd.

A parked pool's instance stays up, tagged with the time its guardian will end it; a pool with the
same spec resumes the parked pool's plan (its key pair, security group, tags and region clients)
and runs on that instance without launching one; at its own exit everything of the parked pool is
deleted, as a pool's own exit deletes it. With nobody coming, the instance ends itself.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aws_cloud import NOTHING_LEFT, FaultProxy, Machines, Network, aws_provider, tagged

import skyward as sky
from skyward.providers import linger


@sky.function
def double(x: int) -> int:
    return 2 * x


def quiet_pool(provider: Any, **kwargs: Any) -> sky.Compute:
    return sky.Compute(provider=provider, console=False, logging=False, **kwargs)


def expires_tag(ec2: Any, instance_id: str) -> float:
    row = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    tags = {t["Key"]: t["Value"] for t in row["Tags"]}
    return time.mktime(time.strptime(tags["skyward:expires"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def test_a_pool_with_the_same_spec_runs_on_the_parked_instance_and_then_deletes_its_pool(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path
) -> None:
    provider = aws_provider(faults, network, machines)
    with quiet_pool(provider, linger=True, ttl=120) as pool:
        assert double(1) >> pool == 2
        parked_pool = pool.name
    (instance,) = tagged(ec2, parked_pool)["instances"]
    assert abs(expires_tag(ec2, instance) - (time.time() + 120)) < 30  # `sky ls` sees when it ends
    with quiet_pool(provider) as pool:
        assert double(2) >> pool == 4
        assert tagged(ec2, parked_pool)["instances"] == [instance]
        assert len(machines.homes) == 1, "a new instance was launched instead of adopting the parked one"
    assert tagged(ec2, parked_pool) == NOTHING_LEFT
    assert linger.parked() == [] and not list((skyward_home / "keys").glob("*"))


def test_a_parked_instance_ends_itself_when_no_pool_comes(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path
) -> None:
    with quiet_pool(aws_provider(faults, network, machines), linger=True, ttl=2) as pool:
        assert double(1) >> pool == 2
        parked_pool = pool.name
    (instance,) = tagged(ec2, parked_pool)["instances"]
    assert machines.ended(instance).wait(40)
    assert tagged(ec2, parked_pool)["instances"] == []
