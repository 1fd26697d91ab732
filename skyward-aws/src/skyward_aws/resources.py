"""The shared resources a pool creates on EC2 (key pair, security group), its tags, and their removal.

Everything is tagged `skyward:pool` (the pool id), `skyward:owner` (who launched it: the IAM
identity) and `skyward:expires` (when a clean-up script may consider it abandoned), so whatever a
crash leaves behind can be found and deleted by tag. All functions here are blocking; the provider
runs them in a thread.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable
from typing import Any

import attrs
import botocore.exceptions
import structlog

from skyward_aws.clients import LOGGER, Clients, error_code, translate

POOL_TAG = "skyward:pool"
OWNER_TAG = "skyward:owner"
EXPIRES_TAG = "skyward:expires"
NODE_TAG = "skyward:node"
#: States of a machine that still exists (and may still cost money).
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")


@attrs.frozen
class Tags:
    pool: str
    owner: str
    expires: str

    @classmethod
    def create(cls, pool: str, owner: str, expires_after: float) -> Tags:
        when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=expires_after)
        return cls(pool, owner, when.strftime("%Y-%m-%dT%H:%M:%SZ"))

    def pairs(self, **extra: str) -> list[dict[str, str]]:
        values = {POOL_TAG: self.pool, OWNER_TAG: self.owner, EXPIRES_TAG: self.expires, **extra}
        return [{"Key": k, "Value": v} for k, v in values.items()]

    def spec(self, *kinds: str, **extra: str) -> list[dict[str, Any]]:
        """`TagSpecifications` tagging these resource kinds as they are created (never untagged)."""
        return [{"ResourceType": kind, "Tags": self.pairs(**extra)} for kind in kinds]


def resource_name(pool: str) -> str:
    return f"skyward-{pool}"


def import_key(clients: Clients, pool: str, public_key: str, tags: Tags) -> str:
    """The pool's login key as an EC2 key pair (AWS then also lists which key a machine has)."""
    name = resource_name(pool)
    try:
        clients.ec2.import_key_pair(
            KeyName=name, PublicKeyMaterial=public_key.encode(), TagSpecifications=tags.spec("key-pair")
        )
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"importing the key pair {name}") from None
    return name


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
    try:
        clients.ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": ssh_port, "ToPort": ssh_port,
             "IpRanges": [{"CidrIp": ssh_cidr, "Description": "Skyward SSH"}]},
            {"IpProtocol": "-1",
             "UserIdGroupPairs": [{"GroupId": group, "Description": "the pool's machines"}]},
        ])
    except botocore.exceptions.ClientError as exc:
        delete_security_group(clients, group, timeout=0)
        raise translate(exc, f"opening port {ssh_port} in {group}") from None
    return group


def delete_security_group(clients: Clients, group: str, timeout: float = 120.0) -> None:
    """Delete the group; AWS refuses while a terminated machine's network interface lingers
    (DependencyViolation), so that is retried for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            clients.ec2.delete_security_group(GroupId=group)
            return
        except botocore.exceptions.ClientError as exc:
            code = error_code(exc)
            if code == "InvalidGroup.NotFound":
                return
            if code != "DependencyViolation" or time.monotonic() >= deadline:
                raise translate(exc, f"deleting the security group {group}") from None
        time.sleep(5.0)


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
    """Wait until none of the pool's machines is left (terminated ones do not count); returns the
    ids still there when `timeout` ran out."""
    deadline = time.monotonic() + timeout
    while True:
        left = [str(i["InstanceId"]) for i in pool_instances(clients, pool)]
        if not left or time.monotonic() >= deadline:
            if left:
                log = structlog.get_logger(LOGGER)
                log.warning("skyward.aws_still_terminating", pool=pool, instances=left)
            return left
        time.sleep(interval)
