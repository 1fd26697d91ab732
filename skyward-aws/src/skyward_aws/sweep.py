"""Skyward's machines on EC2 found and ended without a pool: AWS's answer to `sky ls` / `sky down`.

A machine is Skyward's when it carries the `skyward:pool` tag; nothing without it is listed or
ended, and `end` looks each machine up again by id *and* tag before terminating it, so an id that
is not Skyward's is never touched. A pool's security groups, key pairs and disks carry the same tags;
they are deleted once none of the pool's machines is left (AWS refuses to delete a group a
terminating machine still holds, so that is waited for).

boto3's own configuration is honoured: credentials, `AWS_PROFILE`, `AWS_DEFAULT_REGION`,
`AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_EC2` (moto, LocalStack). The regions looked in are the
one asked for; `all`: every region the account has enabled; none asked: the configured one
(us-east-1 when none) and every region a pool of this user ran in (`regions.remembered`). All
calls block.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Sequence
from typing import Any

import attrs
import botocore.exceptions
import structlog

from skyward.providers.credentials import CredentialStatus
from skyward.providers.sweep import Ended, Machine, SweepReport, parse_time
from skyward_aws import regions, resources
from skyward_aws.clients import DEFAULT_REGION, LOGGER, Clients, clients_for, error_message, translate

#: `--region all`: every region the account has enabled.
ALL_REGIONS = "all"
#: How long `end` waits for the pool's machines to be gone before deleting its security group.
GONE_TIMEOUT = 300.0


def _endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_EC2") or os.environ.get("AWS_ENDPOINT_URL") or None


def _tag(row: dict[str, Any], key: str) -> str | None:
    for tag in row.get("Tags") or []:
        if tag.get("Key") == key:
            return str(tag.get("Value"))
    return None


@attrs.define
class AWSSweeper:
    """EC2's Skyward machines, region by region (see the module docstring)."""

    name: str = "AWS"
    gone_timeout: float = GONE_TIMEOUT
    #: One boto3 session for every region this sweep looks in (`clients_for`), made at first use.
    _session: Any = attrs.field(default=None, init=False, repr=False)

    def credentials(self) -> CredentialStatus:
        from skyward_aws.config import AWS

        return AWS.credentials()

    def clients(self, region: str | None) -> Clients:
        from skyward.storage.boto import boto3_session
        from skyward_aws.config import AWS

        if self._session is None:
            self._session = boto3_session()
        where = region or self._session.region_name or DEFAULT_REGION
        return clients_for(AWS(endpoint_url=_endpoint()), where, self._session)

    def regions(self, region: str | None) -> list[str]:
        """Where to look: `region`; every enabled region for "all"; else the configured region
        and those this user's pools ran in."""
        if region == ALL_REGIONS:
            answer = self.clients(None).ec2.describe_regions(AllRegions=False)
            return sorted(str(r["RegionName"]) for r in answer.get("Regions", []))
        if region is not None:
            return [region]
        return list(dict.fromkeys([self.clients(None).region, *regions.remembered()]))

    def machines(self, region: str | None = None) -> list[Machine]:
        found: list[Machine] = []
        for where in self.regions(region):
            clients = self.clients(where)
            rows = _instances(clients, [{"Name": "tag-key", "Values": [resources.POOL_TAG]}])
            prices = _prices(clients, rows)
            found += [self._machine(clients.region, row, prices) for row in rows]
        return found

    def _machine(self, region: str, row: dict[str, Any], prices: dict[tuple[str, bool], float]) -> Machine:
        node = _tag(row, resources.NODE_TAG)
        kind = str(row.get("InstanceType", ""))
        spot = row.get("InstanceLifecycle") == "spot"
        return Machine(
            provider=self.name, pool=_tag(row, resources.POOL_TAG) or "", id=str(row["InstanceId"]),
            node=int(node) if node and node.lstrip("-").isdigit() else None,
            instance_type=kind + (" (spot)" if spot else ""), region=region,
            state=str(row["State"]["Name"]), launched_at=parse_time(row.get("LaunchTime")),
            hourly_price=prices.get((kind, spot)), lease_expires=parse_time(_tag(row, resources.EXPIRES_TAG)),
        )

    def end(
        self, machines: Sequence[Machine], pools: Collection[str] = (), region: str | None = None
    ) -> SweepReport:
        log = structlog.get_logger(LOGGER)
        items: list[Ended] = []
        by_region: dict[str, list[Machine]] = {}
        for machine in machines:
            by_region.setdefault(machine.region, []).append(machine)
        for where in sorted(set(by_region) or self.regions(region)):
            clients = self.clients(where)
            chosen = by_region.get(where, [])
            ids = [m.id for m in chosen]
            # Looked up again by id and tag: only what still carries the mark is terminated.
            marked = [{"Name": "tag-key", "Values": [resources.POOL_TAG]}]
            rows = _instances(clients, marked, ids) if ids else []
            found = {str(r["InstanceId"]): r for r in rows}
            for machine in chosen:
                row = found.get(machine.id)
                if row is None or _tag(row, resources.POOL_TAG) != machine.pool:
                    items.append(Ended(self.name, machine.pool, "machine", machine.id,
                                       "not found with Skyward's tag for this pool; left alone"))
                    continue
                try:
                    resources.terminate(clients, [machine.id])
                except Exception as exc:  # noqa: BLE001 - reported beside the others
                    items.append(Ended(self.name, machine.pool, "machine", machine.id, str(exc)))
                    continue
                log.info("skyward.aws_swept", pool=machine.pool, instance=machine.id)
                items.append(Ended(self.name, machine.pool, "machine", machine.id))
            for pool in sorted({*(m.pool for m in chosen), *pools}):
                items.extend(self._end_pool_resources(clients, pool))
        return SweepReport(tuple(items))

    def _end_pool_resources(self, clients: Clients, pool: str) -> list[Ended]:
        """The pool's detached volumes, security groups and key pairs, once none of its machines is
        left (a group is deleted last: AWS holds it until the machines' interfaces are gone)."""
        left = resources.wait_terminated(clients, pool, self.gone_timeout)
        tagged = [{"Name": f"tag:{resources.POOL_TAG}", "Values": [pool]}]
        if left:
            return [Ended(self.name, pool, "pool", pool,
                          f"kept its security group and key pair: machines still there: {', '.join(left)}")]
        items: list[Ended] = []
        try:
            groups = clients.ec2.describe_security_groups(Filters=tagged)["SecurityGroups"]
            keys = clients.ec2.describe_key_pairs(Filters=tagged)["KeyPairs"]
            detached = [{"Name": "status", "Values": ["available"]}]
            volumes = [str(v["VolumeId"]) for page in clients.ec2.get_paginator("describe_volumes").paginate(
                Filters=[*tagged, *detached]) for v in page.get("Volumes", [])]
        except botocore.exceptions.ClientError as exc:
            return [Ended(self.name, pool, "pool", pool, f"listing its resources: {error_message(exc)}")]
        for volume in volumes:  # disks that outlived their machines (not DeleteOnTermination)
            try:
                clients.ec2.delete_volume(VolumeId=volume)
                items.append(Ended(self.name, pool, "volume", volume))
            except botocore.exceptions.ClientError as exc:
                items.append(Ended(self.name, pool, "volume", volume, error_message(exc)))
        for group in groups:
            items.append(self._delete_group(clients, pool, str(group["GroupId"])))
        for key in keys:
            name = str(key["KeyName"])
            try:
                resources.delete_key(clients, name)
                items.append(Ended(self.name, pool, "key-pair", name))
            except Exception as exc:  # noqa: BLE001 - reported beside the others
                items.append(Ended(self.name, pool, "key-pair", name, str(exc)))
        return items

    def _delete_group(self, clients: Clients, pool: str, group: str) -> Ended:
        deadline = time.monotonic() + self.gone_timeout
        while True:
            try:
                resources.delete_security_group(clients, group)
                return Ended(self.name, pool, "security-group", group)
            except resources.GroupInUse as exc:
                if time.monotonic() > deadline:
                    return Ended(self.name, pool, "security-group", group, str(exc))
                time.sleep(5.0)
            except Exception as exc:  # noqa: BLE001 - reported beside the others
                return Ended(self.name, pool, "security-group", group, str(exc))


def _instances(
    clients: Clients, filters: list[dict[str, Any]], ids: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Instances matching `filters` (and `ids`) that still exist (terminated ones are left out)."""
    states = [{"Name": "instance-state-name", "Values": list(resources.LIVE_STATES)}]
    args: dict[str, Any] = {"Filters": [*filters, *states]}
    found: list[dict[str, Any]] = []
    try:
        if ids:
            for one in ids:  # one at a time: a single unknown id would fail the whole call
                try:
                    answer = clients.ec2.describe_instances(InstanceIds=[one], **args)
                except botocore.exceptions.ClientError as exc:
                    if "InvalidInstanceID" in str(exc):
                        continue
                    raise
                for reservation in answer.get("Reservations", []):
                    found.extend(reservation.get("Instances", []))
            return found
        for page in clients.ec2.get_paginator("describe_instances").paginate(**args):
            for reservation in page.get("Reservations", []):
                found.extend(reservation.get("Instances", []))
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"listing Skyward's machines in {clients.region}") from None
    return found


def _prices(clients: Clients, rows: list[dict[str, Any]]) -> dict[tuple[str, bool], float]:
    """(type, spot) -> hourly USD, where AWS tells (spot history; the Price List away from moto)."""
    from skyward_aws.pricing import on_demand_prices, spot_prices

    spot = {str(r.get("InstanceType")) for r in rows if r.get("InstanceLifecycle") == "spot"}
    regular = {str(r.get("InstanceType")) for r in rows if r.get("InstanceLifecycle") != "spot"}
    prices: dict[tuple[str, bool], float] = {}
    try:
        if spot:
            prices.update({(k, True): v for k, v in spot_prices(clients, spot).items()})
        if regular:
            prices.update({(k, False): v for k, v in on_demand_prices(clients, regular).items()})
    except Exception as exc:  # noqa: BLE001 - a price is information; the listing goes on without it
        structlog.get_logger(LOGGER).debug("skyward.aws_price_unknown", error=str(exc))
    return prices
