"""`skyward.storage.boto.boto3_session`: sessions of their own that parse botocore's data once."""

from __future__ import annotations

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
