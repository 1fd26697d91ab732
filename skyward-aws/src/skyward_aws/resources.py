"""The shared resources a pool creates on EC2 (key pair, security group), its tags, and their removal.

Everything is tagged `skyward:pool` (the pool id), `skyward:owner` (who launched it: the IAM
identity) and `skyward:expires` (when a clean-up script may consider it abandoned: a lease the live
client renews, `renew_expiry`), so whatever a crash leaves behind can be found and deleted by tag.
Port 22 is opened only to the client's own address, which `client_cidr` asks an echo service for.
All functions here are blocking; the provider runs them in a thread.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import math
from collections.abc import Iterable
from typing import Any

import attrs
import botocore.exceptions
import structlog

from skyward.errors import ProvisionError
from skyward.providers.address import client_cidr as client_cidr
from skyward_aws.clients import LOGGER, Clients, error_code, translate

POOL_TAG = "skyward:pool"
OWNER_TAG = "skyward:owner"
EXPIRES_TAG = "skyward:expires"
NODE_TAG = "skyward:node"
#: States of a machine that still exists (and may still cost money).
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")


def expiry(when: float) -> str:
    """The `skyward:expires` value for the epoch time `when` (UTC, to the second)."""
    moment = datetime.datetime.fromtimestamp(when, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@attrs.frozen
class Tags:
    pool: str
    owner: str
    expires: str

    @classmethod
    def create(cls, pool: str, owner: str, expires_after: float) -> Tags:
        now = datetime.datetime.now(datetime.UTC).timestamp()
        return cls(pool, owner, expiry(now + expires_after))

    def pairs(self, **extra: str) -> list[dict[str, str]]:
        values = {POOL_TAG: self.pool, OWNER_TAG: self.owner, EXPIRES_TAG: self.expires, **extra}
        return [{"Key": k, "Value": v} for k, v in values.items()]

    def spec(self, *kinds: str, **extra: str) -> list[dict[str, Any]]:
        """`TagSpecifications` tagging these resource kinds as they are created (never untagged)."""
        return [{"ResourceType": kind, "Tags": self.pairs(**extra)} for kind in kinds]


def resource_name(pool: str) -> str:
    return f"skyward-{pool}"


def import_key(clients: Clients, pool: str, public_key: str, tags: Tags) -> tuple[str, str]:
    """The pool's login key as an EC2 key pair (AWS then also lists which key a machine has):
    its name and its id (tags are written by id)."""
    name = resource_name(pool)
    try:
        answer = clients.ec2.import_key_pair(
            KeyName=name, PublicKeyMaterial=public_key.encode(), TagSpecifications=tags.spec("key-pair")
        )
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"importing the key pair {name}") from None
    return name, str(answer.get("KeyPairId") or "")


def vpc_of(clients: Clients, subnet_id: str | None) -> str | None:
    """The VPC of the subnet, else the region's default VPC (None if the account has none)."""
    try:
        if subnet_id is not None:
            subnets = clients.ec2.describe_subnets(SubnetIds=[subnet_id])["Subnets"]
            return str(subnets[0]["VpcId"])
        vpcs = clients.ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"finding the network of {subnet_id or 'the default VPC'}") from None
    return str(vpcs[0]["VpcId"]) if vpcs else None


def create_security_group(
    clients: Clients, pool: str, vpc_id: str | None, ssh_port: int, ssh_cidr: str, tags: Tags
) -> str:
    """A group that lets `ssh_cidr` in on `ssh_port` and the pool's machines reach each other
    on every port (rendezvous of torch, JAX, NCCL)."""
    name = resource_name(pool)
    args: dict[str, Any] = {"GroupName": name, "Description": f"Skyward pool {pool}",
                            "TagSpecifications": tags.spec("security-group")}
    if vpc_id is not None:
        args["VpcId"] = vpc_id
    try:
        group = str(clients.ec2.create_security_group(**args)["GroupId"])
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"creating the security group {name}") from None
    network = ipaddress.ip_network(ssh_cidr, strict=False)
    ranges = (
        {"IpRanges": [{"CidrIp": str(network), "Description": "Skyward SSH"}]} if network.version == 4
        else {"Ipv6Ranges": [{"CidrIpv6": str(network), "Description": "Skyward SSH"}]}
    )
    try:
        clients.ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": ssh_port, "ToPort": ssh_port, **ranges},
            {"IpProtocol": "-1",
             "UserIdGroupPairs": [{"GroupId": group, "Description": "the pool's machines"}]},
        ])
    except botocore.exceptions.ClientError as exc:
        delete_security_group(clients, group)
        raise translate(exc, f"opening port {ssh_port} in {group}") from None
    return group


class GroupInUse(ProvisionError):
    """AWS refused to delete a security group that a (terminated) machine's network interface
    still holds (`DependencyViolation`): it frees it within a minute or two, so this is retried."""


def delete_security_group(clients: Clients, group: str) -> None:
    """Delete the group (one already gone is fine); raises `GroupInUse` while AWS still holds it."""
    try:
        clients.ec2.delete_security_group(GroupId=group)
    except botocore.exceptions.ClientError as exc:
        code = error_code(exc)
        if code == "InvalidGroup.NotFound":
            return
        error = translate(exc, f"deleting the security group {group}")
        if code == "DependencyViolation":
            raise GroupInUse(str(error)) from None
        raise error from None


def delete_key(clients: Clients, name: str) -> None:
    try:
        clients.ec2.delete_key_pair(KeyName=name)
    except botocore.exceptions.ClientError as exc:
        if error_code(exc) != "InvalidKeyPair.NotFound":
            raise translate(exc, f"deleting the key pair {name}") from None


def pool_instances(clients: Clients, pool: str, states: Iterable[str] = LIVE_STATES) -> list[dict[str, Any]]:
    """The pool's machines EC2 lists, by tag, in these states."""
    filters = [{"Name": f"tag:{POOL_TAG}", "Values": [pool]},
               {"Name": "instance-state-name", "Values": list(states)}]
    found = []
    try:
        for page in clients.ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page.get("Reservations", []):
                found.extend(reservation.get("Instances", []))
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"listing the machines of {pool}") from None
    return found


def pool_volumes(clients: Clients, pool: str) -> list[str]:
    """The ids of the volumes EC2 lists under the pool's tag (the machines' disks)."""
    try:
        pages = clients.ec2.get_paginator("describe_volumes").paginate(
            Filters=[{"Name": f"tag:{POOL_TAG}", "Values": [pool]}]
        )
        return [str(v["VolumeId"]) for page in pages for v in page.get("Volumes", [])]
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"listing the volumes of {pool}") from None


def delete_volumes(clients: Clients, pool: str) -> None:
    """Delete the pool's disks that outlived their machines (detached: `available`); machines'
    disks are made `DeleteOnTermination`, so this is the net for one attached otherwise."""
    try:
        pages = clients.ec2.get_paginator("describe_volumes").paginate(Filters=[
            {"Name": f"tag:{POOL_TAG}", "Values": [pool]}, {"Name": "status", "Values": ["available"]},
        ])
        ids = [str(v["VolumeId"]) for page in pages for v in page.get("Volumes", [])]
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"listing the volumes of {pool}") from None
    for volume in ids:
        try:
            clients.ec2.delete_volume(VolumeId=volume)
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) != "InvalidVolume.NotFound":
                raise translate(exc, f"deleting the volume {volume}") from None


def renew_expiry(clients: Clients, resource_ids: list[str], expires: str) -> None:
    """Move the `skyward:expires` tag of these resources (machines, volumes, the group, the key
    pair) to `expires`: the live client's lease, so a long job never looks abandoned."""
    if not resource_ids:
        return
    try:
        clients.ec2.create_tags(Resources=resource_ids, Tags=[{"Key": EXPIRES_TAG, "Value": expires}])
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"renewing {EXPIRES_TAG} on {', '.join(resource_ids)}") from None


def terminate(clients: Clients, ids: list[str]) -> None:
    """Terminate these machines; one that is already gone is skipped, not an error."""
    if not ids:
        return
    try:
        clients.ec2.terminate_instances(InstanceIds=ids)
        return
    except botocore.exceptions.ClientError as exc:
        if not error_code(exc).startswith("InvalidInstanceID") or len(ids) == 1:
            if error_code(exc).startswith("InvalidInstanceID"):
                return
            raise translate(exc, f"terminating {', '.join(ids)}") from None
    for one in ids:  # the call names every id or none: find the ones that still exist
        terminate(clients, [one])


def wait_terminated(clients: Clients, pool: str, timeout: float, interval: float = 2.0) -> list[str]:
    """Wait until none of the pool's machines is left (terminated ones do not count), with EC2's
    `instance_terminated` waiter polling every `interval` for `timeout` seconds; returns the ids
    still there when it gave up."""
    left = [str(i["InstanceId"]) for i in pool_instances(clients, pool)]
    if not left:
        return []
    waiter = clients.ec2.get_waiter("instance_terminated")
    attempts = max(1, math.ceil(timeout / interval))
    # It stops early for a machine in a state it will not wait through (`pending`, `stopping`:
    # one nobody asked to terminate) or gone from the listing; either way, read what is left.
    with contextlib.suppress(botocore.exceptions.WaiterError):
        waiter.wait(InstanceIds=left, WaiterConfig={"Delay": interval, "MaxAttempts": attempts})
    left = [str(i["InstanceId"]) for i in pool_instances(clients, pool)]
    if left:
        log = structlog.get_logger(LOGGER)
        log.warning("skyward.aws_still_terminating", pool=pool, instances=left)
    return left
