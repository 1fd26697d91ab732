"""`sky.AWS` hardened, on moto's EC2 (see conftest.py): SSH opened only to the client's address,
IMDSv2 required, everything the pool makes tagged and removed with it, the `skyward:expires` tag
renewed as a lease while the pool runs, and a termination AWS does not confirm in time reported by
instance id instead of leaving `stop()` to time out."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from aws_cloud import CLIENT_IP, NOTHING_LEFT, FaultProxy, Machines, Network, aws_provider, tagged, tags_of

import skyward as sky
from skyward.client import release
from skyward.observe.events import Error
from skyward.observe.logging import configure_logging, reset_logging
from skyward.providers.base import Cluster
from skyward_aws import teardown as aws_teardown


@sky.function
def double(x: int) -> int:
    return 2 * x


def quiet_pool(provider: Any, **kwargs: Any) -> sky.Compute:
    kwargs.setdefault("console", False)
    kwargs.setdefault("logging", False)
    return sky.Compute(provider=provider, **kwargs)


def prepared(config: Any, pool: str, log: Path) -> tuple[Any, Cluster, str]:
    """`prepare` alone (key pair and security group, nothing billable) on the test cloud, with
    the warnings Skyward's log (and so the console's stderr) got meanwhile."""
    provider = config.create()
    configure_logging(sky.LogConfig(level="WARNING", file=str(log), console=False))
    try:
        cluster = asyncio.run(provider.prepare(sky.Spec(provider=config), pool))
    finally:
        reset_logging()
    return provider, cluster, log.read_text()


def ssh_ranges(ec2: Any, cluster: Cluster, port: int = 22) -> list[str]:
    group = cluster.state["aws"].security_group
    (row,) = ec2.describe_security_groups(GroupIds=[group])["SecurityGroups"]
    rules = [p for p in row["IpPermissions"] if p.get("FromPort") == port]
    return [r["CidrIp"] for p in rules for r in p.get("IpRanges", [])]


def pool_row(ec2: Any, pool: str) -> dict[str, Any]:
    tag = [{"Name": "tag:skyward:pool", "Values": [pool]},
           {"Name": "instance-state-name", "Values": ["running"]}]
    (row,) = [i for r in ec2.describe_instances(Filters=tag)["Reservations"] for i in r["Instances"]]
    return row


# -- who may reach port 22 -------------------------------------------------------------------------


def test_the_security_group_lets_only_the_clients_own_address_reach_ssh(
    ec2: Any, faults: FaultProxy, network: Network, skyward_home: Path, tmp_path: Path
) -> None:
    provider, cluster, log = prepared(aws_provider(faults, network), "harden-cidr", tmp_path / "log")
    try:
        assert ssh_ranges(ec2, cluster) == [f"{CLIENT_IP}/32"]
        assert faults.ip_lookups == 1
        (said,) = [line for line in log.splitlines() if "skyward.aws_ssh_ingress" in line]
        assert "warning" in said, "the console's stderr shows warnings, not infos"
        assert f"open only to this client's address {CLIENT_IP}/32" in said
    finally:
        asyncio.run(provider.teardown(cluster))


def test_a_failed_address_lookup_opens_ssh_to_anyone_and_says_so_loudly(
    ec2: Any, faults: FaultProxy, network: Network, skyward_home: Path, tmp_path: Path
) -> None:
    faults.refuse_ip_lookup = True
    provider, cluster, log = prepared(aws_provider(faults, network), "harden-fallback", tmp_path / "log")
    try:
        assert ssh_ranges(ec2, cluster) == ["0.0.0.0/0"]
        (warned,) = [line for line in log.splitlines() if "skyward.aws_ssh_open_to_anyone" in line]
        assert "warning" in warned
        assert "open to the whole internet" in warned and "ssh_cidr" in warned
        assert faults.ip_lookup_url in warned, "the warning does not say why"
    finally:
        asyncio.run(provider.teardown(cluster))


def test_an_explicit_ssh_cidr_wins_and_no_lookup_is_made(
    ec2: Any, faults: FaultProxy, network: Network, skyward_home: Path, tmp_path: Path
) -> None:
    config = aws_provider(faults, network, ssh_cidr="198.51.100.0/24")
    provider, cluster, _ = prepared(config, "harden-explicit", tmp_path / "log")
    try:
        assert ssh_ranges(ec2, cluster) == ["198.51.100.0/24"]
        assert faults.ip_lookups == 0
    finally:
        asyncio.run(provider.teardown(cluster))


# -- the machines ------------------------------------------------------------------------------------


def test_machines_require_imdsv2(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path
) -> None:
    with quiet_pool(aws_provider(faults, network, machines), nodes=1) as pool:
        options = pool_row(ec2, pool.name)["MetadataOptions"]
    assert options["HttpTokens"] == "required", "IMDSv1 lets a forged request read the role's keys"
    assert options["HttpEndpoint"] == "enabled"
    assert faults.launches[-1]["MetadataOptions.HttpTokens"] == "required"


def test_everything_the_pool_makes_is_tagged_and_nothing_tagged_remains_after_exit(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path
) -> None:
    with quiet_pool(aws_provider(faults, network, machines), nodes=1, disk_gb=20) as pool:
        assert double(1) >> pool == 2
        made = tagged(ec2, pool.name)
        key_pairs = ec2.describe_key_pairs(KeyNames=made["key_pairs"])["KeyPairs"]
        groups = ec2.describe_security_groups(GroupIds=made["security_groups"])["SecurityGroups"]
        volumes = ec2.describe_volumes(VolumeIds=made["volumes"])["Volumes"]
        rows = [pool_row(ec2, pool.name), *key_pairs, *groups, *volumes]
    assert [len(made[kind]) for kind in ("instances", "key_pairs", "security_groups", "volumes")] == [1] * 4
    for row in rows:
        tags = tags_of(row)
        assert tags["skyward:pool"] == pool.name, row
        assert tags["skyward:owner"] and tags["skyward:expires"].endswith("Z"), row
    assert tagged(ec2, pool.name) == NOTHING_LEFT


# -- the lease -----------------------------------------------------------------------------------------


def test_the_expires_tag_moves_forward_while_the_pool_is_open(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(release, "LEASE_MIN_INTERVAL", 0.2)
    monkeypatch.setattr(release, "LEASE_MAX_INTERVAL", 0.2)
    config = aws_provider(faults, network, machines, expires_after=5)
    with quiet_pool(config, nodes=1, disk_gb=20, ttl=120) as pool:
        first = tags_of(pool_row(ec2, pool.name))["skyward:expires"]
        time.sleep(2.5)
        assert double(3) >> pool == 6
        made = tagged(ec2, pool.name)
        later = [pool_row(ec2, pool.name)]
        later += ec2.describe_volumes(VolumeIds=made["volumes"])["Volumes"]
        later += ec2.describe_security_groups(GroupIds=made["security_groups"])["SecurityGroups"]
        later += ec2.describe_key_pairs(KeyNames=made["key_pairs"])["KeyPairs"]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 100))
    for row in later:
        expires = tags_of(row)["skyward:expires"]
        assert expires > first, f"the lease was not renewed on {row}"
        assert expires > now, "the lease does not reach a ttl ahead"


# -- a release AWS does not confirm in time ------------------------------------------------------


def test_a_termination_not_confirmed_in_time_is_reported_naming_the_instance(
    ec2: Any, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aws_teardown, "TERMINATION_TIMEOUT", 1.0)
    monkeypatch.setattr(aws_teardown, "GROUP_DELETE_TIMEOUT", 1.0)
    monkeypatch.setattr(release, "RELEASE_MARGIN", 1.0)
    errors: list[Error] = []
    compute = quiet_pool(aws_provider(faults, network, machines), nodes=1, on_event=errors.append)
    with compute as pool:
        assert double(4) >> pool == 8
        instance = pool_row(ec2, pool.name)["InstanceId"]
        faults.stall_terminate = 60.0  # EC2 answers TerminateInstances long after the pool's bound
        started = time.monotonic()
    stopped_in = time.monotonic() - started
    try:
        reports = [e.message for e in errors if isinstance(e, Error)]
        assert any(instance in m and "did not confirm the end" in m for m in reports), reports
        # Its bound is about 3 s, with room for a loaded 2-core machine; under half of EC2's
        # stall says the stop did not wait for its answer.
        assert stopped_in < 30, f"stop() waited {stopped_in:.1f} s past the provider's release_timeout"
    finally:
        faults.release_terminate.set()
        deadline = time.monotonic() + 30
        while tagged(ec2, pool.name)["instances"] and time.monotonic() < deadline:
            time.sleep(0.5)
        left = tagged(ec2, pool.name)
        for group in left["security_groups"]:
            ec2.delete_security_group(GroupId=group)
        for key in left["key_pairs"]:
            ec2.delete_key_pair(KeyName=key)


def test_aws_gives_its_release_the_minutes_a_termination_may_take() -> None:
    config = sky.AWS(region="us-east-1")
    assert config.create().release_timeout >= 600
