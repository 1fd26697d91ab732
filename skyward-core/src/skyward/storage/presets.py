"""Presets: each S3-compatible store with its documented endpoint, returning a `Storage`.

The endpoints, as each provider documents them for S3 clients:

- AWS S3: `https://s3.<region>.amazonaws.com` (the regional endpoint; signing region = region);
- Cloudflare R2: `https://<account_id>.r2.cloudflarestorage.com`, region `auto`;
- Google Cloud Storage, XML API interoperability with HMAC keys: `https://storage.googleapis.com`;
- Wasabi: `https://s3.<region>.wasabisys.com` (Wasabi recommends path-style requests);
- Backblaze B2: `https://s3.<region>.backblazeb2.com` (an application key, not the master key);
- Hyperstack: an access key pair minted with the API key (`POST /v1/object-storage/access-keys`
  of `https://infrahub-api.nexgencloud.com`, scoped to a region such as `CANADA-1`); its S3
  endpoint is shown in the Hyperstack console and is passed as `endpoint=`.
"""

from __future__ import annotations

import functools
import json
import urllib.request
from typing import Any

from skyward.errors import ConfigurationError
from skyward.storage.client import DEFAULT_PART_SIZE, Storage
from skyward.storage.credentials import Credential, resolve_credential

__all__ = ["GCS", "R2", "S3", "Backblaze", "Hyperstack", "Wasabi"]

#: Hyperstack's API, where an API key mints object-storage access keys.
HYPERSTACK_API = "https://infrahub-api.nexgencloud.com/v1"


def _required(preset: str, **values: object) -> None:
    for name, value in values.items():
        if value is None or value == "":
            raise ConfigurationError(f"sky.storage.{preset}: {name}= is required")


def S3(  # noqa: N802 - presets read like the classes they stand for
    *, region: str = "us-east-1", access_key: Credential | None = None, secret_key: Credential | None = None,
    session_token: Credential | None = None, part_size: int = DEFAULT_PART_SIZE,
) -> Storage:
    """Amazon S3 in `region`; without keys, boto3's own search finds them (env, ~/.aws, a role)."""
    _required("S3", region=region)
    return Storage(
        f"https://s3.{region}.amazonaws.com", access_key, secret_key, region=region,
        session_token=session_token, part_size=part_size, flavor="AWS",
    )


def R2(  # noqa: N802
    *, account_id: str, access_key: Credential, secret_key: Credential, part_size: int = DEFAULT_PART_SIZE,
) -> Storage:
    """Cloudflare R2 of account `account_id`, with an R2 API token's access key pair."""
    _required("R2", account_id=account_id, access_key=access_key, secret_key=secret_key)
    return Storage(
        f"https://{account_id}.r2.cloudflarestorage.com", access_key, secret_key, region="auto",
        part_size=part_size, flavor="Cloudflare",
    )


def GCS(  # noqa: N802
    *, access_key: Credential, secret_key: Credential, part_size: int = DEFAULT_PART_SIZE,
) -> Storage:
    """Google Cloud Storage through its S3-interoperable XML API, with an HMAC key pair."""
    _required("GCS", access_key=access_key, secret_key=secret_key)
    return Storage(
        "https://storage.googleapis.com", access_key, secret_key, region="auto", part_size=part_size,
        flavor="GCS",
    )


def Wasabi(  # noqa: N802
    *, region: str = "us-east-1", access_key: Credential, secret_key: Credential,
    part_size: int = DEFAULT_PART_SIZE,
) -> Storage:
    """Wasabi in `region` (path-style, as Wasabi recommends)."""
    _required("Wasabi", region=region, access_key=access_key, secret_key=secret_key)
    return Storage(
        f"https://s3.{region}.wasabisys.com", access_key, secret_key, path_style=True, region=region,
        part_size=part_size, flavor="Wasabi",
    )


def Backblaze(  # noqa: N802
    *, region: str, key_id: Credential, app_key: Credential, part_size: int = DEFAULT_PART_SIZE,
) -> Storage:
    """Backblaze B2 in `region` (e.g. "us-west-004"), with an application key's id and key."""
    _required("Backblaze", region=region, key_id=key_id, app_key=app_key)
    return Storage(
        f"https://s3.{region}.backblazeb2.com", key_id, app_key, region=region, part_size=part_size,
        flavor="Other",
    )


def Hyperstack(  # noqa: N802
    *, api_key: Credential, region: str = "CANADA-1", endpoint: str | None = None,
    access_key: Credential | None = None, secret_key: Credential | None = None,
    part_size: int = DEFAULT_PART_SIZE,
) -> Storage:
    """Hyperstack object storage in `region`.

    Without `access_key`/`secret_key`, one access key pair is minted with `api_key` when the
    store is first opened (once per process and region: Hyperstack shows a secret only when it
    creates it). `endpoint` is the S3 endpoint of the region, from the Hyperstack console.
    """
    _required("Hyperstack", api_key=api_key, region=region)
    if not endpoint:
        raise ConfigurationError(
            f"sky.storage.Hyperstack(region={region!r}): pass endpoint=, the region's S3 endpoint shown "
            "in the Hyperstack console under Object Storage (its API documents the keys, not the URL)"
        )
    if (access_key is None) != (secret_key is None):
        raise ConfigurationError("sky.storage.Hyperstack: give both access_key= and secret_key=, or neither")
    if access_key is None:
        access_key = functools.partial(_minted, api_key, region, "access_key")
        secret_key = functools.partial(_minted, api_key, region, "secret_key")
    return Storage(endpoint, access_key, secret_key, path_style=True, region=region, part_size=part_size)


def _minted(api_key: Credential, region: str, field: str) -> str:
    key = resolve_credential("sky.storage.Hyperstack", "api_key", api_key)
    return str(_mint(key or "", region)[field])


@functools.lru_cache(maxsize=8)
def _mint(api_key: str, region: str) -> dict[str, Any]:
    """A new access key pair of Hyperstack's object storage in `region` (one per process)."""
    request = urllib.request.Request(  # noqa: S310 - a fixed https URL
        f"{HYPERSTACK_API}/object-storage/access-keys",
        data=json.dumps({"region": region, "description": "skyward"}).encode(),
        headers={"api_key": api_key, "accept": "application/json", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        answer = json.loads(response.read())
    body = answer.get("access_key", answer) if isinstance(answer.get("access_key"), dict) else answer
    if not body.get("access_key") or not body.get("secret_key"):
        raise ConfigurationError(f"Hyperstack did not return an access key pair for region {region}")
    return body
