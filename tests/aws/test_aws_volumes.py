"""`sky.Volume(storage=None)` on AWS: the pool mounts S3 of its own region (moto's S3 here),
and its nodes get short-lived keys, never the client's own."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cloud import FaultProxy, Machines, Network, aws_provider

import skyward as sky


@sky.function
def read_volume(folder: str) -> dict[str, Any]:
    conf = Path(os.environ["SKYWARD_WORKDIR"], "volumes", "rclone.conf").read_text()
    names = sorted(os.listdir(folder))
    return {"files": {n: Path(folder, n).read_text() for n in names}, "conf": conf}


def test_an_aws_pool_mounts_its_regions_s3_with_short_lived_keys(
    moto_url: str, faults: FaultProxy, network: Network, machines: Machines, skyward_home: Path,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, aws_credentials: dict[str, str],
) -> None:
    # The test cloud's EC2 endpoint is a proxy that serves EC2 alone; S3 is moto's, named the way
    # boto3 names a service's own endpoint.
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_url)
    bucket = f"data-{uuid.uuid4().hex[:10]}"
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="train.csv", Body=b"x,y\n1,2\n")
    mount = tmp_path / "data"
    provider = aws_provider(faults, network, machines)
    with sky.Compute(provider=provider, volumes=[sky.Volume(bucket, str(mount))], console=False,
                     logging=False) as pool:
        seen = read_volume(str(mount)) >> pool
    assert seen["files"] == {"train.csv": "x,y\n1,2\n"}
    assert "region = us-east-1" in seen["conf"]
    assert f"endpoint = {moto_url}" in seen["conf"]  # the pool's S3 (moto's here)
    assert "session_token = " in seen["conf"]  # STS session keys...
    assert aws_credentials["AWS_ACCESS_KEY_ID"] not in seen["conf"]  # ...not the client's own
    assert aws_credentials["AWS_SECRET_ACCESS_KEY"] not in seen["conf"]
    assert not os.path.ismount(mount)
