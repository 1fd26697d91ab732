"""boto3 sessions for a config, and AWS's errors turned into Skyward's.

boto3 clients are blocking, so the provider calls them through `asyncio.to_thread`; they are
thread-safe once made, so one `Clients` serves every call of a pool. AWS answers failures with
error codes; the ones that mean "no room right now" become `CapacityError` (retried with backoff),
missing or refused credentials become a `ConfigurationError` naming `aws configure`, and anything
else a `ProvisionError` that keeps AWS's code and message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import botocore.config
import botocore.exceptions

from skyward.errors import CapacityError, ConfigurationError, ProvisionError
from skyward.secrets import register_secret
from skyward.storage.boto import boto3_session

if TYPE_CHECKING:
    from skyward_aws.config import AWS

#: Codes meaning AWS has no capacity (or no spot capacity at this price) for the request now.
CAPACITY_CODES = frozenset({
    "InsufficientInstanceCapacity", "InsufficientHostCapacity", "InsufficientCapacity",
    "InsufficientReservedInstanceCapacity", "SpotMaxPriceTooLow", "MaxSpotInstanceCountExceeded",
    "InsufficientSpotInstanceCapacity", "SpotCapacityNotAvailable", "InsufficientCapacityOnHost",
})
#: Codes meaning the credentials are missing, wrong or expired.
CREDENTIAL_CODES = frozenset({
    "AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken", "RequestExpired",
    "UnrecognizedClientException", "InvalidAccessKeyId", "MissingAuthenticationToken",
})
#: Codes meaning an account limit, which waiting does not lift.
QUOTA_CODES = frozenset({"InstanceLimitExceeded", "VcpuLimitExceeded", "MaxSpotFleetRequestCountExceeded"})

CREDENTIALS_HINT = (
    "run `aws configure` (or `aws sso login`), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
    "(or AWS_PROFILE, or AWS(profile=...))"
)
DEFAULT_REGION = "us-east-1"
#: The logger name of this package: under "skyward", so its lines go to Skyward's log file (and stay
#: off the application's root logger) like core's.
LOGGER = "skyward.aws"


def error_code(exc: BaseException) -> str:
    if isinstance(exc, botocore.exceptions.ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def error_message(exc: BaseException) -> str:
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', '')}: {error.get('Message', '')}".strip(": ")
    return str(exc)


def translate(exc: BaseException, what: str) -> Exception:
    """Skyward's error for a failed AWS call (`what` says which, e.g. "launching node 0")."""
    code = error_code(exc)
    if code in CAPACITY_CODES:
        return CapacityError(f"aws: no capacity {what} ({error_message(exc)}); retrying, or try another "
                             "region, accelerator or allocation")
    if code in CREDENTIAL_CODES or isinstance(
        exc, botocore.exceptions.NoCredentialsError | botocore.exceptions.PartialCredentialsError
    ):
        return ConfigurationError(
            f"aws: credentials refused {what} ({error_message(exc)}); {CREDENTIALS_HINT}"
        )
    if code in QUOTA_CODES:
        return ProvisionError(f"aws: account limit reached {what} ({error_message(exc)}); ask AWS for a "
                              "higher quota (Service Quotas console) or ask for fewer or smaller nodes")
    if code == "UnauthorizedOperation":
        return ProvisionError(f"aws: not allowed {what} ({error_message(exc)}); the IAM identity needs "
                              "the EC2 permissions listed in docs/aws.md")
    return ProvisionError(f"aws: failed {what} ({error_message(exc)})")


@attrs.frozen
class Clients:
    """The boto3 clients of one pool, for one region."""

    region: str
    ec2: Any = attrs.field(repr=False)
    session: Any = attrs.field(repr=False)
    endpoint_url: str | None = None

    def client(self, service: str) -> Any:
        return _client(self.session, service, self.region, self.endpoint_url)


def resolve_region(config: AWS, spec_region: str | None) -> str:
    """`AWS(region=...)`, else `Spec(region=...)`, else the AWS configuration's, else us-east-1."""
    if config.region:
        return config.region
    if spec_region:
        return spec_region
    session = _session(config.profile)
    return session.region_name or DEFAULT_REGION


def clients_for(config: AWS, region: str, session: Any = None) -> Clients:
    """The clients for `region`, from `session` when given: one session serving many regions
    parses botocore's service descriptions (EC2's is megabytes of JSON) once, not once a region."""
    session = session if session is not None else _session(config.profile)
    return Clients(region, _client(session, "ec2", region, config.endpoint_url), session, config.endpoint_url)


def check_credentials(clients: Clients) -> str:
    """The caller's ARN; raises `ConfigurationError` when there are no usable credentials."""
    credentials = clients.session.get_credentials()
    if credentials is None:
        raise ConfigurationError(f"aws: no AWS credentials found; {CREDENTIALS_HINT}")
    # boto3 keeps them to itself, but an error text or a user's own log line could carry them.
    frozen = credentials.get_frozen_credentials()
    for secret in (frozen.secret_key, frozen.token):
        if secret:
            register_secret(secret)
    try:
        return str(clients.client("sts").get_caller_identity()["Arn"])
    except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as exc:
        raise translate(exc, "checking the credentials") from None


def _session(profile: str | None) -> Any:
    try:
        return boto3_session(profile)
    except botocore.exceptions.ProfileNotFound as exc:
        raise ConfigurationError(f"AWS(profile={profile!r}): {exc}; {CREDENTIALS_HINT}") from None


def _client(session: Any, service: str, region: str, endpoint_url: str | None) -> Any:
    # Standard retries cover throttling and dropped connections; capacity errors are not retried
    # here (Skyward retries those itself, with its own backoff and fallback to on-demand).
    config = botocore.config.Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=10,
                                    read_timeout=60)
    return session.client(service, region_name=region, endpoint_url=endpoint_url, config=config)
