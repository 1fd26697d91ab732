"""AWS's natural store for `sky.Volume(storage=None)`: S3 in the pool's region, keys for exactly
the pool's volumes.

The nodes never get the client's own keys, nor keys that can do what the client can: STS makes
temporary keys from the client's, limited by a session policy to the buckets and prefixes of the
pool's volumes without a store of their own (read-only ones can only list and read; read-write
ones can also write, delete and upload in parts). See `skyward.client.volumes.scoped_s3_keys`:
with an IAM user's keys, `sts:GetFederationToken` (36 hours, STS's longest); with a role's
session (a role, SSO, an instance profile), `sts:AssumeRole` of that same role (one hour, AWS's
limit when a role's keys assume a role), which the role's trust policy must allow; otherwise, or
when AWS refuses, the pool does not start and the error names `sky.storage.S3(access_key=...,
secret_key=...)`. When the keys end, the nodes' S3 requests are refused: reads of a mount fail and
what is written is no longer uploaded, so a longer pool needs keys of its own for its volumes.
Every value is registered as a secret.

S3's endpoint is boto3's own setting for it, `$AWS_ENDPOINT_URL_S3`, else `AWS(endpoint_url=...)`
(LocalStack, which serves every service on one URL), else the region's; a custom one is path-style.
STS is asked where the provider's other calls go (`AWS(endpoint_url=...)`, else the region's).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from skyward.client.volumes import scoped_s3_keys, volume_grants
from skyward.errors import ConfigurationError
from skyward.storage import Storage
from skyward_aws.clients import CREDENTIALS_HINT, clients_for, resolve_region

if TYPE_CHECKING:
    from skyward_aws.config import AWS

__all__ = ["natural_storage"]


def natural_storage(config: AWS, spec: Any) -> Storage:
    """S3 in the region the pool runs in, with keys for the nodes limited to `spec`'s volumes that
    have no store of their own (see the module docstring)."""
    region = resolve_region(config, getattr(spec, "region", None))
    clients = clients_for(config, region)
    grants = volume_grants(v for v in getattr(spec, "volumes", ()) or () if v.storage is None)
    if not grants:
        raise ConfigurationError("aws: the pool has no volume without storage=; nothing to make keys for")
    keys = scoped_s3_keys(clients.session, grants, sts=clients.client("sts"))
    if keys is None:
        raise ConfigurationError(f"aws: no AWS credentials found for the pool's volumes; {CREDENTIALS_HINT}")
    custom = os.environ.get("AWS_ENDPOINT_URL_S3") or config.endpoint_url
    endpoint = custom or f"https://s3.{region}.amazonaws.com"
    return Storage(
        endpoint, keys.access_key, keys.secret_key, path_style=custom is not None, region=region,
        session_token=keys.session_token, flavor="AWS",
    )
