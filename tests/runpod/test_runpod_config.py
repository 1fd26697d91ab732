"""`sky.RunPod(...)` is checked when it is written (image, cloud type, data centers), and its key
is looked for when a pool starts, never when the value is built."""

from __future__ import annotations

import attrs
import pytest

import skyward as sky
from skyward.errors import ConfigurationError
from skyward.observe.logging import registered_secrets


def test_the_config_builds_without_an_api_key() -> None:
    config = sky.RunPod()
    assert config.api_key is None


def test_the_environment_key_is_not_read_into_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPOD_API_KEY", "rpa_FROM_THE_ENVIRONMENT_123")
    assert sky.RunPod().api_key is None  # read when a pool starts, so it never travels in a spec


def test_a_missing_api_key_fails_when_the_provider_is_created_naming_the_variable() -> None:
    with pytest.raises(ConfigurationError, match=r"RUNPOD_API_KEY.*runpod\.io"):
        sky.RunPod().create()


def test_a_missing_api_key_fails_at_pool_start_when_the_provider_is_named_in_text() -> None:
    compute = sky.Compute(provider="runpod", accelerator="A100", console=False)
    with pytest.raises(ConfigurationError, match=r"RunPod\(api_key=\.\.\.\).*RUNPOD_API_KEY"), compute:
        pass


def test_missing_credentials_names_the_variable_and_the_argument() -> None:
    missing = sky.RunPod().missing_credentials()
    assert missing is not None and missing.credential == "RUNPOD_API_KEY"
    assert str(missing) == "no RUNPOD_API_KEY (set it or pass RunPod(api_key=...))"


def test_missing_credentials_is_none_with_the_variable_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPOD_API_KEY", "rpa_FROM_THE_ENVIRONMENT_123")
    assert sky.RunPod().missing_credentials() is None


def test_missing_credentials_is_none_with_the_key_given() -> None:
    assert sky.RunPod(api_key="rpa_GIVEN_KEY_0123").missing_credentials() is None


def test_an_empty_api_key_is_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="RUNPOD_API_KEY"):
        sky.RunPod(api_key="  ")


def test_the_api_key_stays_out_of_repr_and_is_masked_in_logs() -> None:
    config = sky.RunPod(api_key="rpa_NEVER_PRINT_ME_0123")
    assert "rpa_NEVER_PRINT_ME_0123" not in repr(config)
    assert "rpa_NEVER_PRINT_ME_0123" in registered_secrets()


def test_the_provider_named_runpod_is_this_config() -> None:
    spec = sky.Spec(provider="runpod")
    assert isinstance(spec.provider, sky.RunPod) and spec.provider.name == "runpod"


def test_an_unknown_cloud_type_is_refused_naming_the_choices() -> None:
    with pytest.raises(ConfigurationError, match="SECURE.*COMMUNITY.*ALL"):
        sky.RunPod(api_key="rpa_key_123", cloud_type="PRIVATE")


def test_all_clouds_means_secure_then_community() -> None:
    assert sky.RunPod(api_key="rpa_key_123", cloud_type="all").clouds == ("SECURE", "COMMUNITY")


def test_the_container_image_may_be_an_object_carrying_an_image_name() -> None:
    @attrs.frozen
    class Container:
        image_name: str

    config = sky.RunPod(api_key="rpa_key_123", container_image=Container("ghcr.io/me/train:1"))
    assert config.container_image == "ghcr.io/me/train:1"


def test_data_center_ids_may_be_one_name_or_several() -> None:
    assert sky.RunPod(api_key="rpa_key_123", data_center_ids="EU-RO-1").data_center_ids == ("EU-RO-1",)
    with pytest.raises(ConfigurationError, match="data center ids"):
        sky.RunPod(api_key="rpa_key_123", data_center_ids=[])
