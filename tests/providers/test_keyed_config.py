"""`providers.keyed_config.KeyedConfig`: a one-key cloud's config answers Skyward from the pieces it
names, each imported only when asked, and finds (or names) its key in the cloud's variable."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from skyward.providers.keyed_config import KeyedConfig

PIECES = """
import attrs

class CloudProvider:
    def __init__(self, config, options):
        self.config, self.options = config, options

def estimate(config, spec):
    return 1.25

@attrs.frozen
class CloudOffers:
    api_key: object = None
    api_url: object = None

def check(status):
    return attrs.evolve(status, verified=True, detail="checked")
"""


@attrs.frozen(kw_only=True)
class Cloud(KeyedConfig):
    api_key: str | None = attrs.field(default=None, repr=False)
    api_url: str | None = None

    cloud = "Cloud"
    provider_name = "cloud"
    key_variable = "CLOUD_TEST_API_KEY"
    provider_class = "keyed_cloud_pieces:CloudProvider"
    price_estimate = "keyed_cloud_pieces:estimate"
    offers_class = "keyed_cloud_pieces:CloudOffers"
    key_check = "keyed_cloud_pieces:check"


@pytest.fixture(autouse=True)
def pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    (tmp_path / "keyed_cloud_pieces.py").write_text(PIECES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("CLOUD_TEST_API_KEY", raising=False)
    yield
    sys.modules.pop("keyed_cloud_pieces", None)


def test_the_config_answers_from_the_pieces_it_names_imported_only_when_asked() -> None:
    config = Cloud(api_key="k", api_url="http://127.0.0.1:1")
    assert config.name == "cloud" and "keyed_cloud_pieces" not in sys.modules
    provider = config.create(None)
    assert (type(provider).__name__, provider.config) == ("CloudProvider", config)  # type: ignore[attr-defined]
    assert config.hourly_price(None) == 1.25  # type: ignore[arg-type]
    assert config.offer_source() == sys.modules["keyed_cloud_pieces"].CloudOffers("k", "http://127.0.0.1:1")


def test_a_missing_key_is_named_with_its_fix_and_a_key_in_the_variable_is_found_and_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = Cloud().missing_credentials()
    assert (
        missing is not None and "CLOUD_TEST_API_KEY" in str(missing) and "Cloud(api_key=...)" in str(missing)
    )
    monkeypatch.setenv("CLOUD_TEST_API_KEY", "k")
    assert Cloud().missing_credentials() is None
    status = Cloud.credentials(check=True)
    assert (status.found, status.where, status.verified) == (True, "$CLOUD_TEST_API_KEY", True)
