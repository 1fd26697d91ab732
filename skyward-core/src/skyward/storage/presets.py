"""Presets: each S3-compatible store with its documented endpoint, returning a `Storage`.

The endpoints, as each provider documents them for S3 clients:

- AWS S3: `https://s3.<region>.amazonaws.com` (the regional endpoint; signing region = region);
- Cloudflare R2: `https://<account_id>.r2.cloudflarestorage.com`, region `auto`;
- Google Cloud Storage, XML API interoperability with HMAC keys: `https://storage.googleapis.com`;
- Wasabi: `https://s3.<region>.wasabisys.com` (Wasabi recommends path-style requests);
- Backblaze B2: `https://s3.<region>.backblazeb2.com` (an application key, not the master key);
- Hyperstack: `https://ca1.obj.nexgencloud.io` for `CANADA-1` (`HYPERSTACK_ENDPOINTS`), with an
  ephemeral access key pair minted with the API key on first use and deleted when the storage
  closes (`skyward.storage.hyperstack`).
"""

from __future__ import annotations

from skyward.errors import ConfigurationError
from skyward.storage.client import DEFAULT_PART_SIZE, Storage
from skyward.storage.credentials import Credential, check_credential
from skyward.storage.hyperstack import HYPERSTACK_API, HyperstackKeys

__all__ = ["GCS", "HYPERSTACK_ENDPOINTS", "R2", "S3", "Backblaze", "Hyperstack", "Wasabi"]

#: Hyperstack's object-storage regions and their S3 endpoints. CANADA-1's is the one Hyperstack's
#: clients use (and the public Skyward project's default); another region needs `endpoint=`.
HYPERSTACK_ENDPOINTS: dict[str, str] = {"CANADA-1": "https://ca1.obj.nexgencloud.io"}


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
    *, api_key: Credential | None = None, region: str = "CANADA-1", endpoint: str | None = None,
    access_key: Credential | None = None, secret_key: Credential | None = None,
    part_size: int = DEFAULT_PART_SIZE, api_url: str = HYPERSTACK_API,
) -> Storage:
    """Hyperstack object storage in `region`, at its endpoint (`HYPERSTACK_ENDPOINTS`) or `endpoint=`.

    Without `access_key`/`secret_key`, an access key pair is minted with `api_key` (None reads
    `$HYPERSTACK_API_KEY`) when the store is first used, and deleted when it closes (the `with`
    block's exit, or `close()`): the API key stays here and the pair stops working once we are
    done. Each `Hyperstack(...)` mints its own. Building it reads no variable and calls nothing.
    `api_url` is Hyperstack's API (another only for a proxy or a stand-in).
    """
    _required("Hyperstack", region=region)
    check_credential("sky.storage.Hyperstack", "api_key", api_key)
    if (access_key is None) != (secret_key is None):
        raise ConfigurationError("sky.storage.Hyperstack: give both access_key= and secret_key=, or neither")
    if not api_url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"sky.storage.Hyperstack(api_url={api_url!r}): expected a URL, e.g. {HYPERSTACK_API!r}"
        )
    ephemeral = HyperstackKeys(api_key, region, api_url=api_url) if access_key is None else None
    return Storage(
        endpoint or _hyperstack_endpoint(region), access_key, secret_key, path_style=True, region=region,
        part_size=part_size, ephemeral_keys=ephemeral,
    )


def _hyperstack_endpoint(region: str) -> str:
    """The S3 endpoint of a known region; an unknown one names the known ones and `endpoint=`."""
    endpoint = HYPERSTACK_ENDPOINTS.get(region)
    if endpoint is None:
        known = ", ".join(sorted(HYPERSTACK_ENDPOINTS))
        raise ConfigurationError(
            f"sky.storage.Hyperstack(region={region!r}): no known S3 endpoint for this region "
            f"(known: {known}); pass endpoint=, the region's object-storage URL from the Hyperstack console"
        )
    return endpoint
