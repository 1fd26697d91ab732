"""`sky.storage.Storage` against moto's S3 server: every method, multipart, progress, errors."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from storage_support import ACCESS_KEY, SECRET_KEY

import skyward as sky
from skyward.storage import StorageError, StorageNotFoundError


def test_upload_then_download_round_trips_a_file(store, bucket, tmp_path: Path) -> None:
    source = tmp_path / "model.pt"
    source.write_bytes(b"weights" * 100)
    with store as s3:
        key = s3.upload(bucket, source, key="checkpoints/model.pt")
        target = s3.download(bucket, key, tmp_path / "back" / "model.pt")
    assert key == "checkpoints/model.pt"
    assert target.read_bytes() == source.read_bytes()


def test_upload_without_a_key_uses_the_file_name(store, bucket, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    with store as s3:
        assert s3.upload(bucket, tmp_path / "notes.txt") == "notes.txt"
        assert s3.exists(bucket, "notes.txt")


def test_download_into_a_folder_keeps_the_key_name(store, bucket, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    folder = tmp_path / "into"
    folder.mkdir()
    with store as s3:
        s3.upload(bucket, tmp_path / "a.txt", key="deep/a.txt")
        assert s3.download(bucket, "deep/a.txt", folder) == folder / "a.txt"


def test_ls_lists_the_keys_under_a_prefix(store, bucket, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with store as s3:
        for key in ("data/1", "data/2", "other/3"):
            s3.upload(bucket, tmp_path / "f", key=key)
        assert s3.ls(bucket, prefix="data/") == ["data/1", "data/2"]
        assert s3.ls(bucket) == ["data/1", "data/2", "other/3"]


def test_exists_and_rm(store, bucket, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with store as s3:
        s3.upload(bucket, tmp_path / "f", key="k")
        assert s3.exists(bucket, "k")
        s3.rm(bucket, "k")
        assert not s3.exists(bucket, "k")


def test_a_file_above_the_part_size_goes_up_in_parts(store, bucket, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(store.part_size + 1024 * 1024))
    seen: list[tuple[int, int]] = []
    with store as s3:
        s3.upload(bucket, big, key="big.bin", progress=lambda done, total: seen.append((done, total)))
        etag = s3._client.head_object(Bucket=bucket, Key="big.bin")["ETag"].strip('"')
        back = s3.download(bucket, "big.bin", tmp_path / "big.back")
    assert etag.endswith("-2"), f"a multipart upload's ETag ends in -<parts>, got {etag}"
    assert back.read_bytes() == big.read_bytes()
    assert seen[-1] == (big.stat().st_size, big.stat().st_size)
    assert len(seen) > 1


def test_a_missing_key_is_an_error_naming_bucket_and_key(store, bucket, tmp_path: Path) -> None:
    with store as s3, pytest.raises(StorageNotFoundError) as caught:
        s3.download(bucket, "nope/missing.bin", tmp_path / "x")
    assert f"s3://{bucket}/nope/missing.bin" in str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)
    assert not (tmp_path / "x").exists()


def test_a_missing_bucket_is_an_error_not_false(store) -> None:
    with store as s3, pytest.raises(StorageError, match="s3://no-such-bucket-here/k"):
        s3.exists("no-such-bucket-here", "k")


def test_uploading_a_missing_file_names_it(store, bucket, tmp_path: Path) -> None:
    with store as s3, pytest.raises(StorageError, match="is not a file"):
        s3.upload(bucket, tmp_path / "absent.bin")


def test_credentials_may_be_functions_sync_or_async(s3_url: str, bucket, tmp_path: Path) -> None:
    calls: list[str] = []

    def access() -> str:
        calls.append("access")
        return ACCESS_KEY

    async def secret() -> str:
        await asyncio.sleep(0)
        calls.append("secret")
        return SECRET_KEY

    storage = sky.storage.Storage(s3_url, access, secret, path_style=True)
    assert calls == []  # nothing is asked for until the store is opened
    (tmp_path / "f").write_text("x")
    with storage as s3:
        s3.upload(bucket, tmp_path / "f", key="f")
    assert calls == ["access", "secret"]


def test_a_secret_key_is_registered_for_masking(s3_url: str) -> None:
    from skyward.secrets import registered_secrets

    secret = "a-fresh-secret-key-for-masking-0001"
    with sky.storage.Storage(s3_url, ACCESS_KEY, lambda: secret, path_style=True):
        pass
    assert secret in registered_secrets()
    assert secret not in repr(sky.storage.Storage(s3_url, ACCESS_KEY, secret))


def test_a_credential_function_that_fails_names_the_credential(s3_url: str) -> None:
    def broken() -> str:
        raise RuntimeError("vault is down")

    storage = sky.storage.Storage(s3_url, ACCESS_KEY, broken, path_style=True)
    with pytest.raises(sky.ConfigurationError, match="secret_key=.*vault is down"):
        storage.open()


def test_bad_values_fail_at_construction() -> None:
    with pytest.raises(sky.ConfigurationError, match="endpoint"):
        sky.storage.Storage("s3.amazonaws.com")
    with pytest.raises(sky.ConfigurationError, match="both access_key= and secret_key="):
        sky.storage.Storage("https://x", access_key="only-one")
    with pytest.raises(sky.ConfigurationError, match="part_size"):
        sky.storage.Storage("https://x", part_size=1024)
    with pytest.raises(sky.ConfigurationError, match="credential"):
        sky.storage.Storage("https://x", access_key=123, secret_key="s")
