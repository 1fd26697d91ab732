"""Which keys a pool's nodes get for a volume's store, and that a key minted for the pool ends
with it: real pools on the SSH fixture's host (sshd on loopback) mounting moto's S3, with
Hyperstack's key API faked on loopback (fake_hyperstack.py); `sky.plan` for what a node would be
given without starting one."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.handlers
import pytest
from ssh_hosts import ssh_pool

sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_hyperstack import FakeHyperstack  # noqa: E402

import skyward as sky  # noqa: E402
from skyward.client.volumes import Grant, session_policy  # noqa: E402

API_KEY = "hyperstack-volume-api-key-0123456789"
#: This machine's own AWS keys, as boto3 would find them (fake; looked for where they must not be).
CLIENT_KEYS = {
    "AWS_ACCESS_KEY_ID": "AKIACLIENTOWNKEY0001", "AWS_SECRET_ACCESS_KEY": "client-own-secret-0123456789",
}


@pytest.fixture
def hyperstack_api(tmp_path: Path, s3_url: str) -> Iterator[FakeHyperstack]:
    """The fake key API (after moto, so proxies are off); a key left on it fails the test."""
    with serving(FakeHyperstack(tmp_path, api_key=API_KEY)) as fake:
        yield fake


@pytest.fixture
def client_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """AWS keys in this process's environment, and no AWS files or profile to find others in."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_STS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    for name, value in CLIENT_KEYS.items():
        monkeypatch.setenv(name, value)
    return CLIENT_KEYS


def hyperstack(api: FakeHyperstack, s3_url: str) -> sky.storage.Storage:
    """A Hyperstack store whose keys come from the fake and whose S3 is moto (any key goes)."""
    return sky.storage.Hyperstack(api_key=API_KEY, region="CANADA-1", endpoint=s3_url, api_url=api.url)


@sky.function
def listing(folder: str) -> list[str]:
    return sorted(os.listdir(folder))


# -- a minted key ends with the pool ---------------------------------------------------------------


def test_a_pool_deletes_the_key_it_minted_for_a_volume_once_its_machines_are_released(
    ssh_hosts: Any, store: sky.storage.Storage, bucket: str, hyperstack_api: FakeHyperstack, s3_url: str,
    tmp_path: Path,
) -> None:
    with store as s3:
        s3._client.put_object(Bucket=bucket, Key="a.txt", Body=b"alpha")
    volume = sky.Volume(bucket, str(tmp_path / "data"), storage=hyperstack(hyperstack_api, s3_url))
    live_when_released: list[list[int]] = []
    compute = ssh_pool(ssh_hosts, servers=[0], volumes=[volume])
    compute.on(sky.InstanceDestroyed, lambda _: live_when_released.append(list(hyperstack_api.keys)))
    with compute as pool:
        assert listing(str(tmp_path / "data")) >> pool == ["a.txt"]
        (minted,) = hyperstack_api.keys  # one key, alive while the pool runs
    assert live_when_released == [[minted]]  # still alive while the node unmounted...
    assert hyperstack_api.deleted == [minted]  # ...and deleted after
    assert hyperstack_api.keys == {}


def test_a_pool_that_fails_to_start_deletes_the_key_it_minted(
    ssh_hosts: Any, bucket: str, hyperstack_api: FakeHyperstack, s3_url: str, tmp_path: Path
) -> None:
    volume = sky.Volume(bucket, str(tmp_path / "data"), storage=hyperstack(hyperstack_api, s3_url))
    failing = sky.plugins.Plugin.create("after").with_bootstrap(lambda cluster: "exit 3")
    with pytest.raises(sky.BootstrapFailed):
        ssh_pool(ssh_hosts, servers=[0], volumes=[volume], plugins=[failing]).start()
    assert len(hyperstack_api.deleted) == 1
    assert hyperstack_api.keys == {}


def test_a_store_still_open_elsewhere_keeps_its_key_until_that_client_closes(
    ssh_hosts: Any, bucket: str, hyperstack_api: FakeHyperstack, s3_url: str, tmp_path: Path
) -> None:
    storage = hyperstack(hyperstack_api, s3_url)
    volume = sky.Volume(bucket=bucket, mount=str(tmp_path / "data"), storage=storage)
    with storage as s3:  # the user's own client, open across the pool: one key for both
        with ssh_pool(ssh_hosts, servers=[0], volumes=[volume]) as pool:
            listing(str(tmp_path / "data")) >> pool
        assert len(hyperstack_api.keys) == 1 and s3.ls(bucket) == []
    assert len(hyperstack_api.deleted) == 1 and hyperstack_api.keys == {}


def test_a_key_the_pool_could_not_delete_is_reported_naming_it(
    ssh_hosts: Any, bucket: str, hyperstack_api: FakeHyperstack, s3_url: str, tmp_path: Path
) -> None:
    volume = sky.Volume(bucket, str(tmp_path / "data"), storage=hyperstack(hyperstack_api, s3_url))
    errors: list[sky.Error] = []
    compute = ssh_pool(ssh_hosts, servers=[0], volumes=[volume])
    compute.on(sky.Error, errors.append)
    hyperstack_api.delete_errors = 1
    with compute as pool:
        listing(str(tmp_path / "data")) >> pool
        (minted,) = hyperstack_api.keys
    [error] = [e for e in errors if "not deleted" in e.message]
    assert f"access key id {minted}" in error.message and "delete it under" in error.message
    hyperstack_api.keys.clear()  # deleted by hand, as the message says


# -- what a node is given for a store without keys -------------------------------------------------


def test_a_non_aws_store_without_keys_gives_the_node_no_keys_of_this_machine(
    client_keys: dict[str, str],
) -> None:
    store = sky.storage.Storage("https://minio.example.test", path_style=True)  # keys: the node's own
    volume = sky.Volume(bucket="b", mount="/data", storage=store)
    planned = sky.plan(provider=sky.SSH(hosts=["user@127.0.0.1:22"]), volumes=[volume])
    assert "env_auth = true" in planned.script
    assert "access_key_id" not in planned.script
    assert client_keys["AWS_ACCESS_KEY_ID"] not in planned.script


def test_an_s3_store_without_keys_gives_the_node_keys_made_for_its_volumes(
    client_keys: dict[str, str], s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", s3_url)  # moto's STS
    sent: list[dict[str, Any]] = []
    hook = ("before-call.sts.GetFederationToken", lambda params, **_: sent.append(dict(params["body"])))
    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS", [*botocore.handlers.BUILTIN_HANDLERS, hook])
    volume = sky.Volume(bucket="b", mount="/data", prefix="sets", storage=sky.storage.S3(region="us-east-1"))
    planned = sky.plan(provider=sky.SSH(hosts=["user@127.0.0.1:22"]), volumes=[volume])
    assert client_keys["AWS_ACCESS_KEY_ID"] not in planned.script
    assert "access_key_id = AKIAIOSFODNN7EXAMPLE" in planned.script  # moto's federation key
    assert "session_token = ***" in planned.script
    [request] = sent
    assert json.loads(request["Policy"]) == json.loads(session_policy([Grant("b", "sets", True)]))


def test_a_prefix_with_iam_wildcard_characters_is_granted_literally() -> None:
    policy = json.loads(session_policy([Grant("b", "a*b?c$", read_only=True)]))
    read, listed = policy["Statement"]
    assert read["Resource"] == ["arn:aws:s3:::b/a${*}b${?}c${$}/*"]
    assert listed["Condition"]["StringLike"]["s3:prefix"] == ["a${*}b${?}c${$}/", "a${*}b${?}c${$}/*"]
