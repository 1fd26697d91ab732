"""`skyward.storage.boto.boto3_session`: sessions of their own that parse botocore's data once."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyward.storage.boto import boto3_session


def test_two_sessions_parse_a_service_description_once() -> None:
    first, second = boto3_session(), boto3_session()
    assert first is not second
    loaders = [s._session.get_component("data_loader") for s in (first, second)]
    models = [loader.load_service_model("ec2", "service-2") for loader in loaders]
    assert models[0] is models[1]


def test_a_session_still_answers_for_its_own_profile() -> None:
    import botocore.exceptions

    with pytest.raises(botocore.exceptions.ProfileNotFound):
        boto3_session("a-profile-nobody-has")


def test_clients_of_a_shared_session_keep_their_own_region() -> None:
    east = boto3_session().client("ec2", region_name="us-east-1")
    west = boto3_session().client("ec2", region_name="eu-west-1")
    assert (east.meta.region_name, west.meta.region_name) == ("us-east-1", "eu-west-1")
    assert east.meta.service_model is not None and west.meta.endpoint_url != east.meta.endpoint_url


def test_sessions_of_another_data_path_keep_a_cache_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = boto3_session()._session.get_component("data_loader")
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    other = boto3_session()._session.get_component("data_loader")
    assert str(tmp_path) in other.search_paths
    assert other._cache is not shared._cache
