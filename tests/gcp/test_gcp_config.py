"""`sky.GCP(...)` is checked where it is written, and reads no credentials until a pool starts."""

from __future__ import annotations

from pathlib import Path

import pytest

import skyward as sky
from skyward_gcp.account import resolve_account


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"zone": "us-central1"}, r"GCP\(zone='us-central1'\): expected a zone such as 'us-central1-a'"),
        ({"region": "us-central1-a"}, r"GCP\(region='us-central1-a'\): expected a region"),
        ({"zone": "us-central1-a", "region": "us-central1"}, "not both"),
        ({"zone": "us-central1-a", "api_endpoint": "localhost:8080"}, "expected an http"),
    ],
)
def test_a_bad_setting_fails_where_the_config_is_written(kwargs: dict[str, str], says: str) -> None:
    with pytest.raises(sky.ConfigurationError, match=says):
        sky.GCP(**kwargs)


def test_a_config_is_built_and_pickled_without_any_credentials() -> None:
    import cloudpickle

    config = sky.GCP(project="p", zone="us-central1-a")
    assert cloudpickle.loads(cloudpickle.dumps(config)) == config
    assert config.missing_credentials() is not None  # but a pool would say what is missing


def test_no_credentials_anywhere_fail_at_pool_start_naming_the_variable_the_file_and_the_command() -> None:
    with pytest.raises(sky.ConfigurationError) as caught:
        sky.GCP(zone="us-central1-a").create()
    message = str(caught.value)
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message and "gcloud auth application-default login" in message
    assert "application_default_credentials.json" in message


def test_gclouds_adc_file_is_found_and_a_project_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gcloud = tmp_path / "gcloud"
    gcloud.mkdir(parents=True, exist_ok=True)
    (gcloud / "application_default_credentials.json").write_text(
        '{"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}'
    )
    assert sky.GCP.credentials().found
    with pytest.raises(sky.ConfigurationError, match="GOOGLE_CLOUD_PROJECT"):
        resolve_account(None)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "from-the-environment")
    assert resolve_account(None).project == "from-the-environment"
    assert resolve_account("given").project == "given"
