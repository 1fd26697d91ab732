"""`sky ls` and `sky down` against moto's EC2 server: the leftovers of crashed clients, found by tag.

Each test starts from an empty moto (reset) and makes what a crashed client would leave: machines,
a security group and a key pair tagged `skyward:pool` / `skyward:expires`, as skyward-aws tags
them, and one machine without Skyward's tags, which no command may ever list or touch. `sky` runs
as a subprocess pointed at moto by the standard `AWS_ENDPOINT_URL`, as a user would point it.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from cli_support import Sky
from moto_support import moto_server

LAPSED = "2026-01-01T00:00:00Z"
LATER = "2099-01-01T00:00:00Z"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIASKYWARDTESTING01", "AWS_SECRET_ACCESS_KEY": "skyward-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def ec2(moto_url: str) -> Any:
    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST")).close()
    return boto3.client("ec2", endpoint_url=moto_url, region_name="us-east-1",
                        aws_access_key_id="AKIASKYWARDTESTING01", aws_secret_access_key="x")


@pytest.fixture
def aws_sky(sky: Sky, moto_url: str) -> Sky:
    sky.env.update(CREDENTIALS, AWS_ENDPOINT_URL=moto_url)
    return sky


def _tags(pool: str, expires: str, **extra: str) -> list[dict[str, str]]:
    values = {"skyward:pool": pool, "skyward:owner": "arn:aws:iam::123456789012:user/crashed",
              "skyward:expires": expires, **extra}
    return [{"Key": k, "Value": v} for k, v in values.items()]


def leftover_pool(ec2: Any, pool: str, expires: str, nodes: int = 2) -> list[str]:
    """What a client that crashed mid-pool leaves: its machines, security group, key pair and a
    disk that outlived its machine."""
    ec2.create_security_group(
        GroupName=f"skyward-{pool}", Description=f"Skyward pool {pool}",
        TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags(pool, expires)}],
    )
    ec2.create_key_pair(KeyName=f"skyward-{pool}",
                        TagSpecifications=[{"ResourceType": "key-pair", "Tags": _tags(pool, expires)}])
    ec2.create_volume(AvailabilityZone="us-east-1a", Size=8,
                      TagSpecifications=[{"ResourceType": "volume", "Tags": _tags(pool, expires)}])
    ids = []
    for node in range(nodes):
        tags = _tags(pool, expires, **{"skyward:node": str(node), "Name": f"skyward-{pool}-node-{node}"})
        answer = ec2.run_instances(ImageId=_image(ec2), MinCount=1, MaxCount=1, InstanceType="t3.micro",
                                   TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
        ids.append(answer["Instances"][0]["InstanceId"])
    return ids


def someone_elses_machine(ec2: Any) -> str:
    """A machine Skyward did not make (named like one, even): never listed, never ended."""
    named = [{"Key": "Name", "Value": "skyward-mine-node-0"}]
    answer = ec2.run_instances(ImageId=_image(ec2), MinCount=1, MaxCount=1, InstanceType="t3.micro",
                               TagSpecifications=[{"ResourceType": "instance", "Tags": named}])
    return str(answer["Instances"][0]["InstanceId"])


def _image(ec2: Any) -> str:
    """An AMI of moto's (the machines never boot, any will do), asked for by name: moto's whole
    list is over a thousand images, a second to answer and parse for each machine made."""
    ubuntu = [{"Name": "name", "Values": ["ubuntu/*"]}]
    return str(ec2.describe_images(Owners=["amazon"], Filters=ubuntu)["Images"][0]["ImageId"])


def state(ec2: Any, instance: str) -> str:
    rows = ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"]
    return str(rows[0]["State"]["Name"])


def pool_resources(ec2: Any, pool: str) -> tuple[list[str], list[str]]:
    tagged = [{"Name": "tag:skyward:pool", "Values": [pool]}]
    groups = [g["GroupId"] for g in ec2.describe_security_groups(Filters=tagged)["SecurityGroups"]]
    keys = [k["KeyName"] for k in ec2.describe_key_pairs(Filters=tagged)["KeyPairs"]]
    disks = [v["VolumeId"] for v in ec2.describe_volumes(Filters=tagged)["Volumes"]]
    return groups + disks, keys


def test_ls_lists_exactly_the_machines_skyward_tagged(aws_sky: Sky, ec2: Any) -> None:
    old = leftover_pool(ec2, "crashed1", LAPSED)
    live = leftover_pool(ec2, "running2", LATER, nodes=1)
    someone_elses_machine(ec2)
    listed = aws_sky.json("ls")["machines"]
    assert sorted(m["id"] for m in listed) == sorted([*old, *live])
    by_id = {m["id"]: m for m in listed}
    assert [(by_id[i]["pool"], by_id[i]["node"], by_id[i]["expired"]) for i in old] == [
        ("crashed1", 0, True), ("crashed1", 1, True)
    ]
    assert by_id[live[0]]["lease_expires"] == LATER and not by_id[live[0]]["expired"]
    assert {(m["provider"], m["region"], m["instance_type"], m["state"]) for m in listed} == {
        ("AWS", "us-east-1", "t3.micro", "running")
    }


def test_ls_draws_a_table_with_pool_node_state_and_lease(aws_sky: Sky, ec2: Any) -> None:
    ids = leftover_pool(ec2, "crashed1", LAPSED, nodes=1)
    done = aws_sky("ls")
    assert done.returncode == 0, done.stderr
    line = next(row for row in done.stdout.splitlines() if ids[0] in row)
    assert "crashed1" in line and "running" in line and "lapsed" in line


def test_down_expired_ends_only_lapsed_pools_with_their_security_groups_key_pairs_and_disks(
    aws_sky: Sky, ec2: Any
) -> None:
    old = leftover_pool(ec2, "crashed1", LAPSED)
    live = leftover_pool(ec2, "running2", LATER)
    theirs = someone_elses_machine(ec2)
    done = aws_sky("down", "--expired", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert [state(ec2, i) for i in old] == ["terminated", "terminated"]
    assert pool_resources(ec2, "crashed1") == ([], [])
    assert [state(ec2, i) for i in [*live, theirs]] == ["running"] * 3
    assert pool_resources(ec2, "running2")[1] == ["skyward-running2"]
    ended = {(e["kind"], e["pool"]) for e in json.loads(done.stdout)["ended"]}
    assert ended == {("machine", "crashed1"), ("security-group", "crashed1"), ("key-pair", "crashed1"),
                     ("volume", "crashed1")}


def test_down_pool_ends_that_pool_and_nothing_else(aws_sky: Sky, ec2: Any) -> None:
    first = leftover_pool(ec2, "first1", LATER)
    second = leftover_pool(ec2, "second2", LATER)
    theirs = someone_elses_machine(ec2)
    done = aws_sky("down", "first1", "--yes")
    assert done.returncode == 0, done.stderr
    assert [state(ec2, i) for i in first] == ["terminated", "terminated"]
    assert pool_resources(ec2, "first1") == ([], [])
    assert [state(ec2, i) for i in [*second, theirs]] == ["running"] * 3
    assert {m["pool"] for m in aws_sky.json("ls")["machines"]} == {"second2"}


def test_down_all_ends_every_skyward_machine_but_never_an_untagged_one(aws_sky: Sky, ec2: Any) -> None:
    ours = [*leftover_pool(ec2, "first1", LATER), *leftover_pool(ec2, "second2", LAPSED)]
    theirs = someone_elses_machine(ec2)
    done = aws_sky("down", "--all", "--yes")
    assert done.returncode == 0, done.stderr
    assert {state(ec2, i) for i in ours} == {"terminated"}
    assert state(ec2, theirs) == "running"
    assert aws_sky.json("ls")["machines"] == []


def test_down_refuses_without_yes_when_there_is_no_terminal_to_ask_on(aws_sky: Sky, ec2: Any) -> None:
    ids = leftover_pool(ec2, "crashed1", LAPSED)
    done = aws_sky("down", "--expired")  # subprocess.run: stdin is not a terminal
    assert done.returncode == 1
    assert "--yes" in done.stderr
    assert [state(ec2, i) for i in ids] == ["running", "running"]


def test_down_needs_pools_or_expired_or_all(aws_sky: Sky, ec2: Any) -> None:
    done = aws_sky("down")
    assert done.returncode == 2
    assert "--expired" in done.stderr


def test_a_provider_without_credentials_is_skipped_and_said_so_on_stderr(sky: Sky) -> None:
    done = sky("ls", "--provider", "aws")
    assert done.returncode == 0, done.stderr
    assert "AWS: skipped, no credentials found" in done.stderr and done.stdout == ""
    assert sky.json("ls", "--provider", "aws")["skipped"][0]["provider"] == "AWS"


def test_an_unknown_provider_is_a_usage_error(sky: Sky) -> None:
    done = sky("ls", "--provider", "nosuchcloud")
    assert done.returncode == 2
    assert "nosuchcloud" in done.stderr


def test_down_pool_removes_a_pools_leftovers_when_no_machine_is_left(aws_sky: Sky, ec2: Any) -> None:
    ids = leftover_pool(ec2, "halfway1", LATER, nodes=1)
    ec2.terminate_instances(InstanceIds=ids)  # the client died after its machines, before the rest
    done = aws_sky("down", "halfway1", "--yes")
    assert done.returncode == 0, done.stderr
    assert pool_resources(ec2, "halfway1") == ([], [])


def test_down_asks_on_a_terminal_and_ends_nothing_when_told_no(aws_sky: Sky, ec2: Any) -> None:
    ids = leftover_pool(ec2, "crashed1", LAPSED)
    main, terminal = pty.openpty()
    try:
        command = [sys.executable, "-m", "skyward.cli", "down", "--expired"]
        with subprocess.Popen(command, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=aws_sky.root, env=aws_sky.env) as process:
            os.write(main, b"n\n")
            out, err = process.communicate(timeout=60)
    finally:
        os.close(main)
        os.close(terminal)
    assert "End 2 machine(s)" in err
    assert process.returncode == 1 and "Aborted" in err
    assert [state(ec2, i) for i in ids] == ["running", "running"]


def machine_in(moto_url: str, region: str, pool: str) -> str:
    """A crashed client's machine in another region than the configured one."""
    ec2 = boto3.client("ec2", endpoint_url=moto_url, region_name=region,
                       aws_access_key_id="AKIASKYWARDTESTING01", aws_secret_access_key="x")
    tags = _tags(pool, LAPSED, **{"skyward:node": "0"})
    answer = ec2.run_instances(ImageId=_image(ec2), MinCount=1, MaxCount=1, InstanceType="t3.micro",
                               TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])
    return str(answer["Instances"][0]["InstanceId"])


def test_ls_looks_in_every_region_a_pool_ran_in_and_all_regions_on_request(
    aws_sky: Sky, ec2: Any, moto_url: str
) -> None:
    here = leftover_pool(ec2, "east1", LAPSED, nodes=1)
    west = machine_in(moto_url, "us-west-2", "west1")
    far = machine_in(moto_url, "ap-southeast-2", "far1")
    assert sorted(m["id"] for m in aws_sky.json("ls")["machines"]) == here

    # what a pool that ran in us-west-2 noted (skyward_aws.regions), as a user's earlier run would
    aws_sky.home.mkdir(parents=True, exist_ok=True)
    (aws_sky.home / "aws-regions").write_text("us-west-2\n")
    listed = {m["id"]: m["region"] for m in aws_sky.json("ls")["machines"]}
    assert listed == {here[0]: "us-east-1", west: "us-west-2"}

    everywhere = {m["id"]: m["region"] for m in aws_sky.json("ls", "--region", "all")["machines"]}
    assert everywhere == {here[0]: "us-east-1", west: "us-west-2", far: "ap-southeast-2"}


def test_down_expired_ends_lapsed_machines_in_each_region_it_looks_in(
    aws_sky: Sky, ec2: Any, moto_url: str
) -> None:
    west = machine_in(moto_url, "us-west-2", "west1")
    done = aws_sky("down", "--expired", "--yes", "--region", "all")
    assert done.returncode == 0, done.stderr
    west_ec2 = boto3.client("ec2", endpoint_url=moto_url, region_name="us-west-2",
                            aws_access_key_id="AKIASKYWARDTESTING01", aws_secret_access_key="x")
    assert state(west_ec2, west) in ("shutting-down", "terminated")
