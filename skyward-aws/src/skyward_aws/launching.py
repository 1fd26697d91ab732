"""One node's machine: the `RunInstances` request a pool's plan makes, and the `Instance` it becomes.

Kept apart from the provider (which decides when to launch, spot first or not, and retries
capacity errors) because the request is where a machine's safety is set, and it reads best on its
own: the cloud-init user data with the pool's host key and login key, IMDSv2 only (a server-side
request forgery on the node cannot read the instance role's keys), the machine deleted by its own
shutdown (`InstanceInitiatedShutdownBehavior=terminate`: no stopped machine left with a disk that
bills), its disk deleted with it, everything tagged with the pool and node, and a client token so
a retried request returns the machine already made rather than a second one. Blocking (boto3).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import botocore.exceptions

from skyward.providers.base import Cluster, Instance
from skyward_aws import resources
from skyward_aws.clients import Clients, translate

if TYPE_CHECKING:
    from skyward_aws.config import AWS
    from skyward_aws.provider import Plan


def run_instance(
    clients: Clients, config: AWS, cluster: Cluster, node: int, spot: bool, user_data: str, log: Any
) -> Instance:
    """`RunInstances` for node `node` of `cluster` (spot or on-demand), as an `Instance` without
    its addresses yet (`AWSProvider.refresh` reads them once it runs)."""
    plan: Plan = cluster.state["aws"]
    market = "spot" if spot else "on-demand"
    try:
        answer = clients.ec2.run_instances(**_request(config, cluster, node, spot, user_data))
    except botocore.exceptions.ClientError as exc:
        raise translate(exc, f"launching node {node} ({plan.instance_type.name}, {market})") from None
    made = answer["Instances"][0]
    kind = plan.instance_type
    rate = plan.spot_price if spot else plan.on_demand_price
    log.info("skyward.aws_launched", pool=cluster.id, node=node, instance=made["InstanceId"],
             instance_type=kind.name, market=market)
    return Instance(
        id=str(made["InstanceId"]), node=node, public_ip="", private_ip="", ssh_user=config.username,
        ssh_port=config.ssh_port, spot=spot, instance_type=kind.name, vcpus=kind.vcpus,
        memory_gb=round(kind.memory_gb, 1), hourly_rate=rate or 0.0,
        on_demand_rate=plan.on_demand_price or 0.0,
    )


def _request(config: AWS, cluster: Cluster, node: int, spot: bool, user_data: str) -> dict[str, Any]:
    """The `RunInstances` arguments for one node."""
    plan: Plan = cluster.state["aws"]
    spec = cluster.spec
    extra = {"Name": f"skyward-{cluster.id}-node-{node}", resources.NODE_TAG: str(node)}
    args: dict[str, Any] = {
        "ImageId": plan.image.id, "InstanceType": plan.instance_type.name, "MinCount": 1, "MaxCount": 1,
        "KeyName": plan.key_name, "UserData": user_data,
        "InstanceInitiatedShutdownBehavior": "terminate",
        # IMDSv2 only: metadata (and the instance role's keys) needs a session token.
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},
        "TagSpecifications": plan.tags.spec("instance", "volume", **extra),
        # The same token on a retried request returns the machine already made, not a second one.
        "ClientToken": f"{cluster.id}-{node}-{uuid.uuid4().hex[:12]}",
    }
    if config.subnet_id is not None and not config.use_private_ip:
        args["NetworkInterfaces"] = [{
            "DeviceIndex": 0, "SubnetId": config.subnet_id, "Groups": [plan.security_group],
            "AssociatePublicIpAddress": True,
        }]
    else:
        args["SecurityGroupIds"] = [plan.security_group]
        if config.subnet_id is not None:
            args["SubnetId"] = config.subnet_id
    if config.instance_profile is not None:
        profile = config.instance_profile
        args["IamInstanceProfile"] = {"Arn": profile} if profile.startswith("arn:") else {"Name": profile}
    # The disk goes with the machine (images' own root disks do too; `release` deletes any
    # disk of the pool a custom image's mapping left behind).
    if spec.disk_gb is not None:
        args["BlockDeviceMappings"] = [{"DeviceName": plan.image.root_device, "Ebs": {
            "VolumeSize": int(spec.disk_gb), "VolumeType": "gp3", "DeleteOnTermination": True}}]
    if spot:
        options: dict[str, Any] = {
            "SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate",
        }
        if spec.max_hourly_cost is not None:
            options["MaxPrice"] = f"{spec.max_hourly_cost:.5f}"
        args["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": options}
    return args
