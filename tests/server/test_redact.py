"""Which values of a pool table are secrets, and how the server stores and shows them
(skyward/server/redact.py)."""

from __future__ import annotations

import pytest

from skyward.server.redact import MissingSecret, find_secrets, resolve, shown_form, stored_form

TABLE = {
    "provider": {"type": "runpod", "api_key": "rpa_0123456789abcdef", "key_file": "/home/me/.ssh/id_ed25519"},
    "image": {
        "env": {"HF_TOKEN": "hf_0123456789abcdef", "TOKENIZERS_PARALLELISM": "false", "GREETING": "hello",
                "DATABASE_URL": "postgres://app:pa55word-x@db/app"},
        "pip_indexes": [{"url": "https://me:idx-pass-1@pypi.example/simple", "packages": ["torch"]}],
    },
    "plugins": [{"type": "huggingface", "token": "hf_plugin0123456789"}],
}


def test_secrets_are_found_by_name_and_in_urls_at_any_depth() -> None:
    found = {secret.path: secret.masked for secret in find_secrets(TABLE)}
    assert found == {
        ("provider", "api_key"): ("rpa_0123456789abcdef",),
        ("image", "env", "HF_TOKEN"): ("hf_0123456789abcdef",),
        ("image", "env", "DATABASE_URL"): ("pa55word-x",),
        ("image", "pip_indexes", 0, "url"): ("idx-pass-1",),
        ("plugins", 0, "token"): ("hf_plugin0123456789",),
    }


def test_where_a_credential_is_and_yes_no_words_are_not_secrets() -> None:
    paths = {secret.path for secret in find_secrets(TABLE)}
    assert ("provider", "key_file") not in paths
    assert ("image", "env", "TOKENIZERS_PARALLELISM") not in paths


def test_answers_show_the_table_with_its_secrets_masked() -> None:
    shown = shown_form(TABLE, find_secrets(TABLE))
    assert shown["provider"] == {"type": "runpod", "api_key": "***", "key_file": "/home/me/.ssh/id_ed25519"}
    assert shown["image"]["env"]["DATABASE_URL"] == "postgres://app:***@db/app"
    assert shown["image"]["pip_indexes"][0]["url"] == "https://me:***@pypi.example/simple"
    assert shown["plugins"] == [{"type": "huggingface", "token": "***"}]


def test_the_stored_table_names_variables_and_resolves_back_from_them() -> None:
    environ = {"RUNPOD_API_KEY": "rpa_0123456789abcdef", "MY_HF": "hf_0123456789abcdef"}
    stored = stored_form("gpu", TABLE, find_secrets(TABLE), environ)
    assert stored["provider"]["api_key"] == {"from_env": "RUNPOD_API_KEY"}
    assert stored["image"]["env"]["HF_TOKEN"] == {"from_env": "MY_HF"}  # the variable holding it now
    assert stored["image"]["env"]["DATABASE_URL"] == {"from_env": "DATABASE_URL"}
    index = stored["image"]["pip_indexes"][0]["url"]
    assert index == {"from_env": "SKYWARD_SECRET_GPU_IMAGE_PIP_INDEXES_0_URL"}
    assert stored["plugins"][0]["token"] == {"from_env": "SKYWARD_SECRET_GPU_PLUGINS_0_TOKEN"}
    everything = {**environ, "DATABASE_URL": "postgres://app:pa55word-x@db/app",
                  "SKYWARD_SECRET_GPU_IMAGE_PIP_INDEXES_0_URL": "https://me:idx-pass-1@pypi.example/simple",
                  "SKYWARD_SECRET_GPU_PLUGINS_0_TOKEN": "hf_plugin0123456789"}
    assert resolve("gpu", stored, everything) == TABLE


def test_a_reference_to_an_unset_variable_names_every_variable_missing() -> None:
    stored = stored_form("gpu", TABLE, find_secrets(TABLE), {})
    with pytest.raises(MissingSecret) as raised:
        resolve("gpu", stored, {"RUNPOD_API_KEY": "x"})
    assert [variable for _, variable in raised.value.missing] == [
        "HF_TOKEN", "DATABASE_URL", "SKYWARD_SECRET_GPU_IMAGE_PIP_INDEXES_0_URL",
        "SKYWARD_SECRET_GPU_PLUGINS_0_TOKEN",
    ]
    assert "HF_TOKEN=... sky server start" in str(raised.value)
