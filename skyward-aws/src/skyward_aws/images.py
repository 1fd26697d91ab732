"""Which machine image (AMI) the nodes boot, and what the launch needs to know about it.

Without `AWS(ami=...)` the image is read from AWS's public SSM parameters, which always name the
latest build in the region: Canonical's Ubuntu 22.04 for CPU nodes, AWS's Deep Learning Base GPU
AMI (Ubuntu 22.04, NVIDIA driver and CUDA installed) for accelerated ones. Both log in as
`ubuntu` and run cloud-init, which installs the pool's host key and login key. The image is then
described once: its architecture must match the instance type's (an arm64 image does not boot on
x86_64), and its root device name is where a larger disk (`Spec.disk_gb`) is attached.
"""

from __future__ import annotations

from typing import Any

import attrs
import botocore.exceptions

from skyward.errors import ConfigurationError, ProvisionError
from skyward_aws.clients import Clients, error_code, translate

_UBUNTU = "/aws/service/canonical/ubuntu/server/22.04/stable/current/{arch}/hvm/ebs-gp2/ami-id"
_GPU = "/aws/service/deeplearning/ami/{arch}/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
_UBUNTU_ARCH = {"x86_64": "amd64", "arm64": "arm64"}


@attrs.frozen
class Image:
    id: str
    architecture: str
    root_device: str


def public_parameter(architecture: str, accelerated: bool) -> str:
    """The SSM parameter that names the default image for this architecture."""
    if accelerated:
        return _GPU.format(arch=architecture)
    return _UBUNTU.format(arch=_UBUNTU_ARCH.get(architecture, architecture))


def resolve_image(clients: Clients, ami: str | None, architecture: str, accelerated: bool) -> Image:
    """The image to boot (blocking): `ami`, or the default one for this machine."""
    if ami is None:
        parameter = public_parameter(architecture, accelerated)
        try:
            ami = str(clients.client("ssm").get_parameter(Name=parameter)["Parameter"]["Value"])
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) == "ParameterNotFound":
                raise ProvisionError(
                    f"aws: no default image in {clients.region} ({parameter} is not published there); "
                    "pass AWS(ami=\"ami-...\") with an Ubuntu image that runs cloud-init"
                ) from None
            raise translate(exc, f"reading the default image from {parameter}") from None
    try:
        images = clients.ec2.describe_images(ImageIds=[ami])["Images"]
    except botocore.exceptions.ClientError as exc:
        if error_code(exc).startswith("InvalidAMIID"):
            images = []
        else:
            raise translate(exc, f"describing the image {ami}") from None
    if not images:
        raise ConfigurationError(
            f"AWS(ami={ami!r}): no such image in {clients.region}; AMI ids are per region: look it up "
            "there, or leave ami=None for Ubuntu 22.04 / the Deep Learning GPU AMI"
        )
    image: dict[str, Any] = images[0]
    found = Image(
        ami, str(image.get("Architecture") or architecture), str(image.get("RootDeviceName") or "/dev/sda1")
    )
    if found.architecture != architecture:
        raise ConfigurationError(
            f"AWS(ami={ami!r}) is a {found.architecture} image but the chosen instance type is "
            f"{architecture}; "
            f'pass an {architecture} image, or Spec(architecture="{found.architecture}")'
        )
    return found
