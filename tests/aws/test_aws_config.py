"""`sky.AWS(...)`: names resolve, and mistakes fail where they are written, naming the fix."""

from __future__ import annotations

import pytest

import skyward as sky
from skyward.errors import ConfigurationError
from skyward_aws import AWS


def test_sky_aws_and_the_provider_name_resolve_to_the_aws_config() -> None:
    assert sky.AWS is AWS
    assert isinstance(sky.Spec(provider="aws").provider, AWS)


@pytest.mark.parametrize(("field", "value", "hint"), [
    ("ami", "ubuntu-22.04", "ami-"),
    ("subnet_id", "10.0.0.0/24", "subnet-"),
    ("security_group_id", "default", "sg-"),
    ("ssh_port", 70000, "1 to 65535"),
    ("region", "US East", "us-east-1"),
    ("ssh_cidr", "everywhere", "0.0.0.0/0"),
    ("endpoint_url", "localhost:4566", "http://"),
    ("instance_type", "large", "g5.xlarge"),
    ("ip_lookup_url", "checkip.amazonaws.com", "https://checkip.amazonaws.com"),
])
def test_a_malformed_setting_is_refused_naming_the_fix(field: str, value: object, hint: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"AWS\({field}=.*{hint}"):
        AWS(**{field: value})


def test_the_defaults_need_nothing_but_credentials() -> None:
    config = AWS()
    assert (config.username, config.ssh_port, config.name) == ("ubuntu", 22, "aws")
    assert config.region is None and config.ami is None and not config.use_private_ip


def test_by_default_ssh_is_opened_to_the_clients_own_address_found_by_aws_echo_service() -> None:
    config = AWS()
    assert config.ssh_cidr is None
    assert config.ip_lookup_url == "https://checkip.amazonaws.com"
    assert AWS(ssh_cidr="0.0.0.0/0").ssh_cidr == "0.0.0.0/0"


def test_spot_notices_come_from_aws_own_metadata_service_unless_told_otherwise() -> None:
    config = AWS()
    assert (config.metadata_url, config.replace_on_rebalance) == ("http://169.254.169.254", False)
    assert AWS(metadata_url="http://[fd00:ec2::254]").metadata_url == "http://[fd00:ec2::254]"
    with pytest.raises(ConfigurationError, match=r"AWS\(metadata_url='169.254.169.254'\).*root URL"):
        AWS(metadata_url="169.254.169.254")
    with pytest.raises(ConfigurationError, match="replace_on_rebalance"):
        AWS(replace_on_rebalance="yes")  # type: ignore[arg-type]
