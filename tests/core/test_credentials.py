"""`resolve_secret`: where every provider's API key comes from, and what it says when there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyward.errors import ConfigurationError
from skyward.observe.logging import registered_secrets
from skyward.providers.credentials import resolve_secret

VARIABLE = "SKYWARD_TEST_CLOUD_KEY"


@pytest.fixture(autouse=True)
def no_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)


def test_the_argument_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, "key-from-the-environment-1")
    key = resolve_secret("key-from-the-argument-123", VARIABLE, provider="Cloud")
    assert key == "key-from-the-argument-123"


def test_without_an_argument_the_environment_variable_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, " key-from-the-environment-1\n")
    assert resolve_secret(None, VARIABLE, provider="Cloud") == "key-from-the-environment-1"


def test_then_the_first_key_file_that_holds_a_key(tmp_path: Path) -> None:
    empty, found = tmp_path / "empty", tmp_path / "found"
    empty.write_text("\n")
    found.write_text("key-from-the-file-0123\n")
    files = (tmp_path / "missing", empty, found)
    assert resolve_secret(None, VARIABLE, provider="Cloud", config_files=files) == "key-from-the-file-0123"


def test_no_key_names_the_argument_the_variable_and_the_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_secret(
            None, VARIABLE, provider="Cloud", config_files=(tmp_path / "key",), hint="see the docs"
        )
    message = str(caught.value)
    assert "Cloud(api_key=...)" in message and VARIABLE in message and str(tmp_path / "key") in message
    assert message.endswith("; see the docs")


def test_a_key_that_is_not_text_is_refused_naming_the_argument() -> None:
    expected = r"Cloud\(token=...\): expected the key as a string, got int"
    with pytest.raises(ConfigurationError, match=expected):
        resolve_secret(1234, VARIABLE, provider="Cloud", argument="token")


def test_the_key_found_is_masked_in_logs_from_then_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, "key-to-be-masked-0123456")
    resolve_secret(None, VARIABLE, provider="Cloud")
    assert "key-to-be-masked-0123456" in registered_secrets()
