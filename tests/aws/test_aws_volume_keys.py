"""The keys an AWS pool's nodes get for `sky.Volume(storage=None)`: made by STS (moto's server)
from the client's, with a session policy naming exactly the pool's buckets, prefixes and modes.

moto does not enforce session policies, so the tests read the policy the client sent: a botocore
`before-call.sts.*` hook on every session the test makes (`BUILTIN_HANDLERS`, which botocore reads
when a session is created), which sees the request as it goes out.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import boto3
import botocore.handlers
import pytest
from aws_cloud import FaultProxy, Machines, Network, aws_provider

import skyward as sky
from skyward.client.volumes import FEDERATION_SECONDS, ROLE_SECONDS
from skyward_aws.storage import natural_storage

#: moto's account, and the key pair its GetFederationToken answers with (always the same).
ACCOUNT = "123456789012"
FEDERATED_KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.fixture
def sts_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """(operation, request parameters) of every STS call made by sessions created in the test."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        calls.append((model.name, dict(params.get("body") or {})))

    handlers = [*botocore.handlers.BUILTIN_HANDLERS, ("before-call.sts", record)]
    monkeypatch.setattr(botocore.handlers, "BUILTIN_HANDLERS", handlers)
    return calls


def sent_policy(calls: list[tuple[str, dict[str, Any]]], operation: str) -> dict[str, Any]:
    """The session policy of the one `operation` call among `calls`."""
    [params] = [params for name, params in calls if name == operation]
    return json.loads(params["Policy"])


def statements(policy: dict[str, Any]) -> dict[str, tuple[list[str], Any, Any]]:
    """Each statement by its first action: (actions, resources, condition)."""
    return {s["Action"][0]: (s["Action"], s["Resource"], s.get("Condition")) for s in policy["Statement"]}


def aws(moto_url: str) -> Any:
    return sky.AWS(endpoint_url=moto_url, region="us-east-1")


def spec_with(moto_url: str, *volumes: sky.Volume) -> sky.Spec:
    return sky.Spec(provider=aws(moto_url), volumes=list(volumes))


@sky.function
def read_conf(folder: str) -> dict[str, Any]:
    conf = Path(os.environ["SKYWARD_WORKDIR"], "volumes", "rclone.conf").read_text()
    return {"files": sorted(os.listdir(folder)), "conf": conf}


def test_an_aws_pool_gives_its_nodes_keys_limited_to_its_volumes(
    moto_url: str, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, aws_credentials: dict[str, str],
    sts_calls: list[tuple[str, dict[str, Any]]],
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_url)
    bucket = f"data-{uuid.uuid4().hex[:10]}"
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="sets/a.csv", Body=b"x\n")
    volumes = [sky.Volume(bucket, str(tmp_path / "data"), prefix="sets"),
               sky.Volume(bucket, str(tmp_path / "ckpt"), prefix="runs/7", read_only=False)]
    provider = aws_provider(faults, network, machines)
    with sky.Compute(provider=provider, volumes=volumes, console=False, logging=False) as pool:
        seen = read_conf(str(tmp_path / "data")) >> pool
    assert seen["files"] == ["a.csv"]
    assert f"access_key_id = {FEDERATED_KEY}" in seen["conf"]  # what STS made...
    assert aws_credentials["AWS_ACCESS_KEY_ID"] not in seen["conf"]  # ...never the client's own
    assert aws_credentials["AWS_SECRET_ACCESS_KEY"] not in seen["conf"]
    [params] = [params for name, params in sts_calls if name == "GetFederationToken"]
    assert params["DurationSeconds"] == FEDERATION_SECONDS
    granted = statements(json.loads(params["Policy"]))
    assert granted["s3:GetObject"][1] == [f"arn:aws:s3:::{bucket}/sets/*", f"arn:aws:s3:::{bucket}/runs/7/*"]
    assert granted["s3:PutObject"][1] == [f"arn:aws:s3:::{bucket}/runs/7/*"]
    assert granted["s3:ListBucket"][1:] == (
        f"arn:aws:s3:::{bucket}", {"StringLike": {"s3:prefix": ["sets/", "sets/*", "runs/7/", "runs/7/*"]}}
    )


def test_a_read_only_volumes_keys_can_list_and_read_its_prefix_and_nothing_else(
    moto_url: str, aws_credentials: dict[str, str], sts_calls: list[tuple[str, dict[str, Any]]]
) -> None:
    storage = natural_storage(aws(moto_url), spec_with(moto_url, sky.Volume("b1", "/data", prefix="sets/v2")))
    assert storage.access_key == FEDERATED_KEY
    policy = sent_policy(sts_calls, "GetFederationToken")
    assert policy == {"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadObjects", "Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": ["arn:aws:s3:::b1/sets/v2/*"]},
        {"Sid": "List0", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": "arn:aws:s3:::b1",
         "Condition": {"StringLike": {"s3:prefix": ["sets/v2/", "sets/v2/*"]}}},
    ]}
    assert "Put" not in json.dumps(policy) and "Delete" not in json.dumps(policy)


def test_a_read_write_volumes_keys_may_write_delete_and_upload_in_parts_under_its_prefix(
    moto_url: str, aws_credentials: dict[str, str], sts_calls: list[tuple[str, dict[str, Any]]]
) -> None:
    volume = sky.Volume("b2", "/ckpt", prefix="runs/1", read_only=False)
    natural_storage(aws(moto_url), spec_with(moto_url, volume))
    granted = statements(sent_policy(sts_calls, "GetFederationToken"))
    assert granted["s3:PutObject"][:2] == (
        ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
        ["arn:aws:s3:::b2/runs/1/*"],
    )
    assert granted["s3:GetObject"][1] == ["arn:aws:s3:::b2/runs/1/*"]


def test_a_whole_bucket_volume_lists_the_bucket_without_a_prefix_condition(
    moto_url: str, aws_credentials: dict[str, str], sts_calls: list[tuple[str, dict[str, Any]]]
) -> None:
    natural_storage(aws(moto_url), spec_with(moto_url, sky.Volume("b3", "/data")))
    granted = statements(sent_policy(sts_calls, "GetFederationToken"))
    assert granted["s3:ListBucket"][1:] == ("arn:aws:s3:::b3", None)
    assert granted["s3:GetObject"][1] == ["arn:aws:s3:::b3/*"]


def test_only_volumes_without_a_store_of_their_own_are_in_the_policy(
    moto_url: str, aws_credentials: dict[str, str], sts_calls: list[tuple[str, dict[str, Any]]]
) -> None:
    other = sky.storage.Storage("https://r2.example.test", "AK", "SK")
    spec = spec_with(moto_url, sky.Volume("mine", "/data"), sky.Volume("theirs", "/other", storage=other))
    natural_storage(aws(moto_url), spec)
    assert "theirs" not in json.dumps(sent_policy(sts_calls, "GetFederationToken"))


def test_a_role_session_assumes_the_same_role_with_the_same_policy(
    moto_url: str, aws_credentials: dict[str, str], sts_calls: list[tuple[str, dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moto.sts.models import sts_backends

    role = f"trainer-{uuid.uuid4().hex[:8]}"
    account = {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}
    trust = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": account, "Action": "sts:AssumeRole"}]}
    iam = boto3.client("iam", endpoint_url=moto_url, region_name="us-east-1")
    arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    sts = boto3.client("sts", endpoint_url=moto_url, region_name="us-east-1")
    session = sts.assume_role(RoleArn=arn, RoleSessionName="me")["Credentials"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", session["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", session["SecretAccessKey"])
    monkeypatch.setenv("AWS_SESSION_TOKEN", session["SessionToken"])
    sts_calls.clear()

    storage = natural_storage(aws(moto_url), spec_with(moto_url, sky.Volume("b4", "/data", prefix="x")))

    [params] = [params for name, params in sts_calls if name == "AssumeRole"]
    assert params["RoleArn"] == arn
    assert params["DurationSeconds"] == ROLE_SECONDS
    assert not any(name == "GetFederationToken" for name, _ in sts_calls)
    assert storage.access_key != session["AccessKeyId"] and storage.session_token != session["SessionToken"]
    stored = sts_backends[ACCOUNT]["aws"].assumed_roles[-1]  # what moto's server kept of the call
    assert (stored.access_key_id, stored.role_arn) == (storage.access_key, arn)
    assert json.loads(stored.policy) == json.loads(params["Policy"])
    assert statements(json.loads(stored.policy))["s3:GetObject"][1] == ["arn:aws:s3:::b4/x/*"]


def test_an_iam_users_mfa_session_is_refused_naming_keys_of_the_volumes_own(
    moto_url: str, aws_credentials: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sts = boto3.client("sts", endpoint_url=moto_url, region_name="us-east-1")
    session = sts.get_session_token(DurationSeconds=900)["Credentials"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", session["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", session["SecretAccessKey"])
    monkeypatch.setenv("AWS_SESSION_TOKEN", session["SessionToken"])
    named = r"limited to their buckets.*MFA.*access_key=\.\.\., secret_key="
    with pytest.raises(sky.ConfigurationError, match=named):
        natural_storage(aws(moto_url), spec_with(moto_url, sky.Volume("b5", "/data")))


def test_a_policy_over_awss_limit_is_refused_before_asking_sts(
    moto_url: str, aws_credentials: dict[str, str], sts_calls: list[tuple[str, dict[str, Any]]]
) -> None:
    volumes = [sky.Volume("b6", f"/data{i}", prefix=f"{'p' * 120}/{i}") for i in range(12)]
    with pytest.raises(sky.ConfigurationError, match=r"over AWS's 2048: use fewer volumes"):
        natural_storage(aws(moto_url), spec_with(moto_url, *volumes))
    assert [name for name, _ in sts_calls] == ["GetCallerIdentity"]
