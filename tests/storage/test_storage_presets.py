"""The presets point at each store's documented S3 endpoint."""

from __future__ import annotations

import pytest

import skyward as sky


@pytest.mark.parametrize(
    ("storage", "endpoint", "region"),
    [
        (sky.storage.S3(region="eu-west-1"), "https://s3.eu-west-1.amazonaws.com", "eu-west-1"),
        (sky.storage.R2(account_id="abc123", access_key="a", secret_key="s"),
         "https://abc123.r2.cloudflarestorage.com", "auto"),
        (sky.storage.GCS(access_key="a", secret_key="s"), "https://storage.googleapis.com", "auto"),
        (sky.storage.Wasabi(region="eu-central-1", access_key="a", secret_key="s"),
         "https://s3.eu-central-1.wasabisys.com", "eu-central-1"),
        (sky.storage.Backblaze(region="us-west-004", key_id="k", app_key="s"),
         "https://s3.us-west-004.backblazeb2.com", "us-west-004"),
        (sky.storage.Hyperstack(api_key="key", region="CANADA-1", endpoint="https://s3.example.test"),
         "https://s3.example.test", "CANADA-1"),
    ],
)
def test_each_preset_has_its_endpoint(storage: sky.storage.Storage, endpoint: str, region: str) -> None:
    assert isinstance(storage, sky.storage.Storage)
    assert (storage.endpoint, storage.signing_region) == (endpoint, region)


def test_hyperstack_defaults_to_its_regions_endpoint() -> None:
    storage = sky.storage.Hyperstack(api_key="key", region="CANADA-1")
    assert storage.endpoint == "https://ca1.obj.nexgencloud.io"


def test_a_preset_missing_its_keys_names_them() -> None:
    with pytest.raises(TypeError):
        sky.storage.R2(account_id="abc")  # type: ignore[call-arg]
    with pytest.raises(sky.ConfigurationError, match="account_id= is required"):
        sky.storage.R2(account_id="", access_key="a", secret_key="s")
