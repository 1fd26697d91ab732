"""`sky.AWS(...)`: the settings a user writes for EC2, checked when they are written.

Everything here is a plain value (the config travels inside specs, which are pickled), so a typo
such as `ami="ubuntu"` fails on the line that wrote it, naming the fix, rather than minutes later
inside a half-created pool. Nothing here talks to AWS.

The config is the package's front: the pool turns it into a provider with `create()` and asks it
`hourly_price()` (only to order several specs by cost); both hand over to `provider` and
`pricing`, which never import this module at run time (only for annotations), so the imports flow
one way: clients <- catalog/images/resources <- pricing <- provider <- config <- hooks.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from skyward.errors import ConfigurationError
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.providers.credentials import CredentialStatus, MissingCredential
    from skyward.spec import Spec
    from skyward.storage import Storage
    from skyward_aws.offers import AWSOffers
    from skyward_aws.provider import AWSProvider

_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_USER = re.compile(r"^[a-z_][a-z0-9_.-]*$", re.IGNORECASE)


def _prefixed(prefix: str, example: str) -> Any:
    """A validator for an optional AWS resource id, which always starts with its kind."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None:
            return
        if not isinstance(value, str) or not value.startswith(prefix) or len(value) <= len(prefix):
            raise ConfigurationError(
                f"AWS({attribute.name}={value!r}): expected an id starting with {prefix!r}, "
                f"e.g. {attribute.name}={example!r}; leave it out to let Skyward choose or create one"
            )

    return check


def _check_region(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not _REGION.match(value)):
        raise ConfigurationError(
            f'AWS(region={value!r}): expected a region name such as "us-east-1", or None for '
            "Spec(region=...) and then your AWS configuration's default"
        )


def _check_port(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ConfigurationError(
            f"AWS(ssh_port={value!r}): expected a port from 1 to 65535, e.g. ssh_port=22"
        )


def _check_user(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not _USER.match(value):
        raise ConfigurationError(
            f'AWS(username={value!r}): expected the AMI\'s login user, e.g. username="ubuntu" '
            '(Ubuntu and the Deep Learning AMIs) or "ec2-user" (Amazon Linux)'
        )


def _check_cidr(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    try:
        ipaddress.ip_network(value, strict=False)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigurationError(
            f'AWS(ssh_cidr={value!r}): expected an address range such as "203.0.113.0/24", or '
            '"0.0.0.0/0" to accept SSH from anywhere (logins are key-only, host keys pinned), or None for '
            "this client's public address"
        ) from None


def _check_endpoint(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not re.match(r"^https?://[^/\s]+", value)):
        raise ConfigurationError(
            f'AWS(endpoint_url={value!r}): expected a URL such as "http://localhost:4566" (LocalStack), '
            "or None for AWS itself"
        )


def _check_lookup_url(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not re.match(r"^https?://[^/\s]+", value):
        raise ConfigurationError(
            f'AWS(ip_lookup_url={value!r}): expected a URL that answers with the caller\'s address, '
            'e.g. "https://checkip.amazonaws.com"'
        )


def _check_metadata_url(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not re.match(r"^https?://[^/\s]+/?$", value):
        raise ConfigurationError(
            f'AWS(metadata_url={value!r}): expected the instance metadata service\'s root URL, as the '
            'nodes reach it: "http://169.254.169.254" (AWS\'s own, the default), or "http://[fd00:ec2::254]"'
        )


def _check_instance_type(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or "." not in value.strip(".")):
        raise ConfigurationError(
            f'AWS(instance_type={value!r}): expected an EC2 type such as "g5.xlarge", or None to pick '
            "the smallest type that fits the spec"
        )


def _check_positive(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(
            f"AWS({attribute.name}={value!r}): expected a positive number of seconds, e.g. 86400"
        )


def _check_bool(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigurationError(f"AWS({attribute.name}={value!r}): expected True or False")


def _optional_text(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigurationError(f"AWS({attribute.name}={value!r}): expected a non-empty name or None")


@attrs.frozen(kw_only=True)
class AWS(ProviderConfig):
    """Run a pool on EC2 machines made for it and deleted with it.

    `region=None` uses `Spec(region=...)`, then your AWS configuration's default (us-east-1 when
    none is set). `ami=None` picks Canonical's Ubuntu 22.04 for CPU nodes and AWS's Deep Learning
    Base GPU AMI (Ubuntu 22.04, NVIDIA driver) for GPU nodes, through AWS's public SSM parameters.
    `subnet_id`/`security_group_id` put the machines in your network (by default: the default VPC,
    and a security group made for the pool that lets `ssh_cidr` reach `ssh_port` and the pool's
    machines reach each other). `ssh_cidr=None` (the default) opens `ssh_port` to this client's
    public address only (`/32`), as `ip_lookup_url` (AWS's echo service) sees it; when that lookup
    fails the pool warns loudly and opens it to `0.0.0.0/0` (logins stay key-only, host keys
    pinned). An explicit `ssh_cidr` is used as written. `use_private_ip=True` connects to the
    machines' private addresses (a VPN, a bastion's network, or the test harness). `python` is an
    interpreter already on the image that the node venv reuses. `endpoint_url` points boto3 at an
    EC2 look-alike (LocalStack, moto) instead of AWS. `instance_type` skips the choice.
    `expires_after` is the first value of the `skyward:expires` tag (it covers provisioning and
    bootstrap); once the pool runs, the client renews that tag as a lease (`Provider.renew_lease`),
    so `sky down` and clean-up scripts can tell an abandoned machine from a long job. Nothing is
    deleted by the tag itself. Each spot node reads its spot interruption notice and rebalance
    recommendation from the instance metadata service at `metadata_url` (IMDSv2); a notice
    replaces the node's machine and retries its tasks, and so does a rebalance recommendation
    with `replace_on_rebalance=True` (otherwise it is logged). See docs/compute.md.
    """

    region: str | None = attrs.field(default=None, validator=_check_region)
    ami: str | None = attrs.field(default=None, validator=_prefixed("ami-", "ami-0123456789abcdef0"))
    instance_type: str | None = attrs.field(default=None, validator=_check_instance_type)
    subnet_id: str | None = attrs.field(default=None, validator=_prefixed("subnet-", "subnet-0abc1234"))
    security_group_id: str | None = attrs.field(default=None, validator=_prefixed("sg-", "sg-0abc1234"))
    instance_profile: str | None = attrs.field(default=None, validator=_optional_text)
    username: str = attrs.field(default="ubuntu", validator=_check_user)
    ssh_port: int = attrs.field(default=22, validator=_check_port)
    ssh_cidr: str | None = attrs.field(default=None, validator=_check_cidr)
    ip_lookup_url: str = attrs.field(default="https://checkip.amazonaws.com", validator=_check_lookup_url)
    use_private_ip: bool = attrs.field(default=False, validator=_check_bool)
    python: str | None = attrs.field(default=None, validator=_optional_text)
    profile: str | None = attrs.field(default=None, validator=_optional_text)
    endpoint_url: str | None = attrs.field(default=None, validator=_check_endpoint)
    expires_after: float = attrs.field(default=86_400.0, validator=_check_positive)
    metadata_url: str = attrs.field(default="http://169.254.169.254", validator=_check_metadata_url)
    replace_on_rebalance: bool = attrs.field(default=False, validator=_check_bool)

    @property
    def name(self) -> str:
        return "aws"

    def create(self, options: Options | None = None) -> AWSProvider:
        """The provider for one pool. Imported here, when a pool starts, not with the config: it
        loads boto3 and asyncssh, which resolving `sky.AWS` does not need (speed, not a cycle)."""
        from skyward_aws.provider import AWSProvider

        return AWSProvider(self, options)

    has_volume_storage: ClassVar[bool] = True

    def volume_storage(self, spec: Spec) -> Storage:
        """The store of `sky.Volume(storage=None)`: S3 in the pool's region, with temporary keys for
        the nodes that reach only `spec`'s volumes (`skyward_aws.storage`; imported here, when a
        pool's volumes are rendered)."""
        from skyward_aws.storage import natural_storage

        return natural_storage(self, spec)

    def hourly_price(self, spec: Spec) -> float | None:
        """One node's price per hour for `spec` (spot or on-demand, as its allocation says), or
        None when AWS does not tell (no credentials, no price list): the pool then tries this spec
        last. Blocking; the catalog and prices are cached, so `prepare` does not ask again.
        (`pricing` is imported here for the same reason as `create`'s provider.)"""
        from skyward_aws.pricing import hourly_price

        return hourly_price(self, spec)

    def offer_source(self) -> AWSOffers:
        """This config's region's offers in Skyward's catalog (`sky offers`), which a pool with
        several specs and `selection="cheapest"` prices its specs from (`skyward.market`)."""
        from skyward_aws.offers import AWSOffers

        return AWSOffers(type(self).credentials, region=self.region, profile=self.profile,
                         endpoint_url=self.endpoint_url)

    def missing_credentials(self) -> MissingCredential | None:
        """What this config lacks to start, for a pool with several specs to skip it: None when
        boto3's credential chain finds credentials for `profile` (variables, profiles, SSO, and,
        unlike `credentials()`, container and instance roles, which ask the metadata service:
        this runs when a pool starts, where a machine with a role must not be skipped), else
        what to set. Nothing is asked of AWS itself."""
        import botocore.exceptions
        import botocore.session

        from skyward.providers.credentials import MissingCredential

        try:
            found = botocore.session.Session(profile=self.profile).get_credentials()
        except botocore.exceptions.BotoCoreError as error:
            named = f"AWS profile {self.profile!r}" if self.profile else "AWS credentials"
            return MissingCredential(
                provider="AWS", credential=named, looked=str(error),
                fix=f"{error}; add it with `aws configure --profile ...` or pass another AWS(profile=...)",
            )
        if found is not None:
            return None
        return MissingCredential(
            provider="AWS", credential="AWS_ACCESS_KEY_ID",
            fix="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or log in with `aws configure` / "
            "`aws sso login` and pass AWS(profile=...)",
            looked="boto3's credential chain (variables, ~/.aws, SSO, roles)",
        )

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: what boto3's credential chain finds (variables, profiles, SSO...),
        without the instance-metadata lookups, which are network calls. `check` asks STS who the
        credentials belong to (`AWS_ENDPOINT_URL` is honoured, so moto answers in tests)."""
        import botocore.exceptions
        import botocore.session

        from skyward.providers.credentials import CredentialStatus

        try:
            session = botocore.session.Session()
            resolver = session.get_component("credential_provider")
            for network_only in ("container-role", "iam-role"):
                resolver.remove(network_only)
            found = resolver.load_credentials()
        except botocore.exceptions.BotoCoreError as error:
            return CredentialStatus(found=False, where=str(error))
        if found is None:
            return CredentialStatus(
                found=False, where="no AWS_ACCESS_KEY_ID, profile or SSO login (aws configure)"
            )
        where = {"env": "$AWS_ACCESS_KEY_ID", "shared-credentials-file": "~/.aws/credentials"}
        status = CredentialStatus(found=True, where=where.get(found.method, found.method))
        if not check:
            return status
        try:
            identity = session.create_client("sts").get_caller_identity()
        except Exception as error:  # noqa: BLE001 - any refusal is the answer to report
            return attrs.evolve(status, verified=False, detail=str(error))
        return attrs.evolve(status, verified=True, detail=str(identity.get("Arn", "")))
