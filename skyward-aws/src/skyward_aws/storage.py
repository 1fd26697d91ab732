"""AWS's natural store for `sky.Volume(storage=None)`: S3 in the pool's region, short-lived keys.

The nodes never get the client's long-lived keys. With an IAM user's keys the client asks STS for
a session (`GetSessionToken`, `SESSION_SECONDS`) and hands the nodes that temporary key pair and
token; keys that are temporary already (a role, SSO, `AWS_SESSION_TOKEN`) are passed on as they
are, since STS does not issue sessions for those. Every value is registered as a secret.
S3's endpoint is boto3's own setting for it, `$AWS_ENDPOINT_URL_S3`, else `AWS(endpoint_url=...)`
(LocalStack, which serves every service on one URL), else the region's; a custom one is path-style.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import botocore.exceptions

from skyward.errors import ConfigurationError
from skyward.secrets import register_secret
from skyward.storage import Storage
from skyward_aws.clients import CREDENTIALS_HINT, clients_for, resolve_region, translate

if TYPE_CHECKING:
    from skyward_aws.config import AWS

__all__ = ["SESSION_SECONDS", "natural_storage"]

#: How long the nodes' S3 keys last: STS's longest session for an IAM user's keys (36 hours).
SESSION_SECONDS = 36 * 3600


def natural_storage(config: AWS, spec: Any) -> Storage:
    """S3 in the region the pool runs in, with keys for the nodes (see the module docstring)."""
    region = resolve_region(config, getattr(spec, "region", None))
    clients = clients_for(config, region)
    credentials = clients.session.get_credentials()
    if credentials is None:
        raise ConfigurationError(f"aws: no AWS credentials found for the pool's volumes; {CREDENTIALS_HINT}")
    frozen = credentials.get_frozen_credentials()
    access, secret, token = frozen.access_key, frozen.secret_key, frozen.token
    if not token:
        try:
            answer = clients.client("sts").get_session_token(DurationSeconds=SESSION_SECONDS)["Credentials"]
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as exc:
            what = "getting short-lived keys for the pool's volumes (sts:GetSessionToken)"
            raise translate(exc, what) from None
        access, secret, token = answer["AccessKeyId"], answer["SecretAccessKey"], answer["SessionToken"]
    for value in (secret, token):
        register_secret(value)
    custom = os.environ.get("AWS_ENDPOINT_URL_S3") or config.endpoint_url
    endpoint = custom or f"https://s3.{region}.amazonaws.com"
    return Storage(
        endpoint, access, secret, path_style=custom is not None, region=region,
        session_token=token, flavor="AWS",
    )
