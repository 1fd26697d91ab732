"""`sky.AWS` end to end on moto's EC2, with a real sshd behind each instance (see conftest.py).

A pool provisions, its machines get our keys through their user data, the pool logs in pinning
the host key, bootstraps, runs tasks and, on exit, terminates the machines and deletes the key
pair and security group it made.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from aws_cloud import (
    NOTHING_LEFT,
    FaultProxy,
    Machines,
    Network,
    aws_provider,
    machine_keys,
    offered_gpu,
    tagged,
)

import skyward as sky
from skyward.errors import CapacityError, ConfigurationError, HostKeyError, ProvisionError


@sky.function
def double(x: int) -> int:
    return 2 * x


@sky.function
def identity() -> dict[str, Any]:
    info = sky.instance_info()
    return {"node": info.node, "id": info.id, "type": info.instance_type, "ip": info.private_ip,
            "provider": info.provider, "spot": info.spot}


def quiet_pool(provider: Any, **kwargs: Any) -> sky.Compute:
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=provider, **kwargs)


def launched_ids(ec2: Any, pool: str) -> list[str]:
    tag = [{"Name": "tag:skyward:pool", "Values": [pool]}]
    rows = ec2.describe_instances(Filters=tag)["Reservations"]
    return [i["InstanceId"] for r in rows for i in r["Instances"]]


def states(ec2: Any, ids: list[str]) -> set[str]:
    rows = ec2.describe_instances(InstanceIds=ids)["Reservations"]
    return {i["State"]["Name"] for r in rows for i in r["Instances"]}


def test_a_two_node_pool_runs_on_its_machines_and_deletes_everything_on_exit(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path
) -> None:
    provider = aws_provider(faults, network, machines)
    with quiet_pool(provider, nodes=2) as pool:
        assert double(21) >> pool == 42
        seen = identity() @ pool
        pool_id = pool.name
        ids = launched_ids(ec2, pool_id)
        assert sorted(s["node"] for s in seen) == [0, 1]
        assert sorted(s["id"] for s in seen) == sorted(ids)
        assert {s["ip"] for s in seen} == {machines.servers[i].address for i in ids}
        assert all(s["provider"] == "aws" and s["type"] for s in seen)
        assert all(s["spot"] for s in seen), "spot-if-available (the default) launched on-demand"
        assert tagged(ec2, pool_id)["key_pairs"] == [f"skyward-{pool_id}"]
        assert len(tagged(ec2, pool_id)["security_groups"]) == 1
    assert states(ec2, ids) == {"terminated"}
    assert tagged(ec2, pool_id) == NOTHING_LEFT
    assert not list((skyward_home / "keys").glob("*")), "the pool's login key outlived it"
    # where `sky ls` will look for this user's machines (skyward_aws.regions)
    assert (skyward_home / "aws-regions").read_text().split() == ["us-east-1"]


def test_machines_get_our_keys_and_tags_and_no_secret_reaches_logs_or_events(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path,
    tmp_path: Path, aws_credentials: dict[str, str],
) -> None:
    events: list[Any] = []
    log_file = tmp_path / "skyward.log"
    logging = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    with quiet_pool(aws_provider(faults, network, machines), nodes=1, logging=logging,
                    on_event=events.append) as pool:
        (instance_id,) = launched_ids(ec2, pool.name)
        host_key, login_key = machine_keys(ec2, instance_id)
        login_public = (skyward_home / "keys" / f"{pool.name}_ed25519.pub").read_text().strip()
        assert double(2) >> pool == 4  # logged in: the machine answered with the user data's host key
        row = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        behaviour = ec2.describe_instance_attribute(
            InstanceId=instance_id, Attribute="instanceInitiatedShutdownBehavior"
        )["InstanceInitiatedShutdownBehavior"]["Value"]
        group = ec2.describe_security_groups(GroupIds=[g["GroupId"] for g in row["SecurityGroups"]])
    tags = {t["Key"]: t["Value"] for t in row["Tags"]}
    group_tags = {t["Key"]: t["Value"] for t in group["SecurityGroups"][0]["Tags"]}
    assert tags["skyward:pool"] == group_tags["skyward:pool"] == pool.name
    assert tags["skyward:node"] == "0" and tags["skyward:owner"] and tags["skyward:expires"].endswith("Z")
    assert behaviour == "terminate", "a worker's ttl shutdown would leave a stopped machine behind"
    assert row["KeyName"] == f"skyward-{pool.name}"
    assert login_key.strip() == login_public
    assert asyncssh.import_private_key(host_key).algorithm == b"ssh-ed25519"
    text = log_file.read_text()
    assert "skyward.aws_launched" in text, "the log stream is empty: nothing was checked"
    streams = {"log": text, "events": "\n".join(repr(e) for e in events)}
    body = [line for line in host_key.splitlines() if not line.startswith("-----")]
    for name, stream in streams.items():
        assert "PRIVATE KEY" not in stream, name
        assert not any(line in stream for line in body), f"the private host key reached the {name}"
        assert aws_credentials["AWS_SECRET_ACCESS_KEY"] not in stream, f"the AWS secret reached the {name}"


def test_an_impossible_accelerator_fails_before_anything_is_created(
    ec2: Any, faults: FaultProxy, network: Network, skyward_home: Path
) -> None:
    before = {
        "keys": len(ec2.describe_key_pairs()["KeyPairs"]),
        "groups": len(ec2.describe_security_groups()["SecurityGroups"]),
    }
    card, carrying = offered_gpu(ec2)
    impossible = sky.accelerators.Custom(card, count=64)
    compute = quiet_pool(aws_provider(faults, network), nodes=1, accelerator=impossible)
    refused = rf"no instance type .* 64x {re.escape(card)}"
    with pytest.raises(ProvisionError, match=refused) as raised, compute:
        pass
    closest = str(raised.value).split("the closest are: ", 1)[1].split(". Change", 1)[0]
    named = {entry.split(" ", 1)[0] for entry in closest.split("; ")}
    assert named and named <= carrying, closest
    assert faults.launches == []
    assert len(ec2.describe_key_pairs()["KeyPairs"]) == before["keys"]
    assert len(ec2.describe_security_groups()["SecurityGroups"]) == before["groups"]
    assert not list((skyward_home / "keys").glob("*")), "the pool's login key outlived a failed start"


def test_spot_capacity_error_falls_back_to_on_demand(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path
) -> None:
    faults.refuse_spot = True
    with quiet_pool(aws_provider(faults, network, machines), nodes=1, allocation="spot-if-available") as pool:
        (seen,) = identity() @ pool
        (instance_id,) = launched_ids(ec2, pool.name)
        row = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    assert faults.spot_refusals == 1
    assert seen["spot"] is False
    assert row.get("InstanceLifecycle") != "spot"
    markets = [launch.get("InstanceMarketOptions.MarketType") for launch in faults.launches]
    assert markets == ["spot", None]


def test_spot_without_fallback_retries_capacity_errors_then_fails(
    ec2: Any, faults: FaultProxy, network: Network, skyward_home: Path
) -> None:
    faults.refuse_spot = True
    # Bounded by attempts, not by a timeout that a loaded machine's slow first attempt outlasts.
    options = sky.Options(provision_timeout=300, provision_retry_delay=0.2, max_provision_attempts=3)
    compute = quiet_pool(aws_provider(faults, network), nodes=1, allocation="spot", options=options)
    with pytest.raises(CapacityError, match="InsufficientInstanceCapacity"), compute:
        pass
    assert faults.spot_refusals == 3, "capacity errors were not retried as many times as allowed"
    assert all(launch.get("InstanceMarketOptions.MarketType") == "spot" for launch in faults.launches)
    assert tagged(ec2, compute.name) == NOTHING_LEFT
    assert not list((skyward_home / "keys").glob("*"))


def test_a_machine_answering_with_another_host_key_is_refused_and_terminated(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path
) -> None:
    machines.impostor_key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    compute = quiet_pool(aws_provider(faults, network, machines), nodes=1, options=sky.Options(ssh_timeout=5))
    with pytest.raises(HostKeyError), compute:
        pass
    pool_id = compute.name
    assert states(ec2, launched_ids(ec2, pool_id)) == {"terminated"}
    assert tagged(ec2, pool_id) == NOTHING_LEFT


def test_missing_credentials_are_reported_naming_aws_configure(
    faults: FaultProxy, network: Network, skyward_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    compute = quiet_pool(aws_provider(faults, network), nodes=1)
    with pytest.raises(ConfigurationError, match="aws configure"), compute:
        pass
    assert faults.launches == []

