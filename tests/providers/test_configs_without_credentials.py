"""Every provider config is a plain value: it builds with no credential anywhere, reads no file,
opens no connection, and carries no credential it did not get as an argument. Credentials are
looked for when a pool starts (`missing_credentials`, then the provider itself)."""

from __future__ import annotations

import builtins
import io
import pickle
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cloud_env import clear_cloud_credentials

import skyward as sky
from skyward.providers.credentials import MissingCredential, missing_credentials

CLOUDS: dict[str, Callable[[], Any]] = {
    "RunPod": lambda: sky.RunPod(),
    "VastAI": lambda: sky.VastAI(),
    "Verda": lambda: sky.Verda(),
    "Novita": lambda: sky.Novita(),
    "AWS": lambda: sky.AWS(),
}
CONFIGS: dict[str, Callable[[], Any]] = {
    **CLOUDS,
    "SSH": lambda: sky.SSH(hosts=["node-a", "node-b"]),
    "Local": lambda: sky.Local(),
}
#: What each cloud's `missing_credentials` names when nothing is set.
NEEDS = {
    "RunPod": "RUNPOD_API_KEY",
    "VastAI": "VAST_API_KEY",
    "Verda": "VERDA_CLIENT_ID and VERDA_CLIENT_SECRET",
    "Novita": "NOVITA_API_KEY",
    "AWS": "AWS_ACCESS_KEY_ID",
}
#: The variables that give each cloud its credentials.
GIVEN = {
    "RunPod": {"RUNPOD_API_KEY": "rpa_PLANTED_SECRET_0123"},
    "VastAI": {"VAST_API_KEY": "vast_PLANTED_SECRET_0123"},
    "Verda": {"VERDA_CLIENT_ID": "verda-id", "VERDA_CLIENT_SECRET": "verda_PLANTED_SECRET_0123"},
    "Novita": {"NOVITA_API_KEY": "nv_PLANTED_SECRET_0123"},
    "AWS": {"AWS_ACCESS_KEY_ID": "AKIAPLANTED", "AWS_SECRET_ACCESS_KEY": "aws_PLANTED_SECRET_0123"},
}


@pytest.fixture(autouse=True)
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return clear_cloud_credentials(monkeypatch, tmp_path)


@pytest.mark.parametrize("name", CONFIGS)
def test_the_config_builds_with_no_credentials_anywhere(name: str) -> None:
    config = CONFIGS[name]()
    assert type(config).__name__ == name and config.name == name.lower()


@pytest.mark.parametrize("name", CONFIGS)
def test_building_the_config_reads_no_file_and_opens_no_connection(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    CONFIGS[name]()  # the class resolved and its modules imported: imports read files, configs must not

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"building sky.{name}() touched {args[:1]!r}")

    for target, attribute in ((builtins, "open"), (io, "open"), (socket.socket, "connect"),
                              (socket, "create_connection")):
        monkeypatch.setattr(target, attribute, refuse)
    CONFIGS[name]()


@pytest.mark.parametrize("name", CLOUDS)
def test_an_environment_credential_does_not_travel_in_the_config(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in GIVEN[name].items():
        monkeypatch.setenv(variable, value)
    config = CLOUDS[name]()
    assert b"PLANTED" not in pickle.dumps(config) and "PLANTED" not in repr(config)


@pytest.mark.parametrize("name", CLOUDS)
def test_missing_credentials_names_what_to_set_and_how(name: str) -> None:
    missing = CLOUDS[name]().missing_credentials()
    assert isinstance(missing, MissingCredential)
    assert (missing.provider, missing.credential) == (name, NEEDS[name])
    assert str(missing).startswith(f"no {NEEDS[name]} (") and missing.fix in str(missing)


@pytest.mark.parametrize("name", CLOUDS)
def test_missing_credentials_is_none_once_the_variables_are_set(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in GIVEN[name].items():
        monkeypatch.setenv(variable, value)
    assert CLOUDS[name]().missing_credentials() is None


@pytest.mark.parametrize(
    "config",
    [
        lambda: sky.RunPod(api_key="rpa_GIVEN_KEY_0123"),
        lambda: sky.VastAI(api_key="vast_GIVEN_KEY_0123"),
        lambda: sky.Verda(client_id="verda-id", client_secret="verda_GIVEN_SECRET_0123"),
        lambda: sky.Novita(api_key="nv_GIVEN_KEY_0123"),
    ],
    ids=["RunPod", "VastAI", "Verda", "Novita"],
)
def test_missing_credentials_is_none_with_the_credential_given_as_an_argument(
    config: Callable[[], Any],
) -> None:
    assert config().missing_credentials() is None


def test_verda_takes_the_secret_from_the_argument_and_the_id_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert sky.Verda(client_secret="verda_GIVEN_SECRET_0123").missing_credentials().credential == (
        "VERDA_CLIENT_ID"
    )
    monkeypatch.setenv("VERDA_CLIENT_ID", "verda-id")
    assert sky.Verda(client_secret="verda_GIVEN_SECRET_0123").missing_credentials() is None


def test_vastai_finds_the_key_file_vastai_writes(home: Path) -> None:
    key_file = home / ".config" / "vastai" / "vast_api_key"
    key_file.parent.mkdir(parents=True)
    key_file.write_text("vast_KEY_FROM_THE_FILE_0123\n")
    assert sky.VastAI().missing_credentials() is None


def test_aws_finds_a_profile_of_the_shared_credentials_file(home: Path) -> None:
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(
        "[work]\naws_access_key_id = AKIAWORK\naws_secret_access_key = work-secret\n"
    )
    assert sky.AWS(profile="work").missing_credentials() is None


def test_aws_names_a_profile_that_does_not_exist() -> None:
    missing = sky.AWS(profile="nowhere").missing_credentials()
    assert missing is not None and missing.credential == "AWS profile 'nowhere'"
    assert "AWS(profile=...)" in missing.fix


@pytest.mark.parametrize("name", ["SSH", "Local"])
def test_providers_without_cloud_credentials_are_never_found_lacking(name: str) -> None:
    assert missing_credentials(CONFIGS[name]()) is None
