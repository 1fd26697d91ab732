"""The kit of a cloud whose API takes one key (`skyward.providers.api_key`, `KeyedSweeper`,
`KeyedOffers(account=)`, `first_price`): where the key and endpoint are found, and a config, a
sweeper and an offer source that get everything else from one declaration, exercised on a small
cloud module written to disk and imported only when a part is asked for."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

import skyward as sky
from skyward.extension.settings import api_url, secret
from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.market.rental import Rental
from skyward.providers.api_key import ApiKeyAccount, ApiKeyCloud, ApiKeyConfig
from skyward.providers.calls import first_price
from skyward.providers.credentials import CredentialStatus

ACCOUNT = ApiKeyAccount(
    cloud="Nimbus",
    variable="NIMBUS_API_KEY",
    url="https://api.nimbus.example/v1",
    url_variable="NIMBUS_API_URL",
    keys_page="https://nimbus.example/keys",
)

#: The cloud's own modules: an API client listing two machines (refusing the key "refused"), the
#: provider, the price function, the offer source and the sweeper a config names.
CLOUD = """
import attrs
from skyward.providers.named_sweep import KeyedSweeper
from skyward.providers.sweep import Machine

class NimbusAPI:
    def __init__(self, key, url):
        self.key, self.url, self.closed = key, url, False

    async def machines(self):
        if self.key == "refused":
            raise PermissionError("Nimbus refused the key")
        return [{"id": "m1", "name": "skyward-p-0"}, {"id": "m2", "name": "other"}]

    async def close(self):
        self.closed = True

class NimbusProvider:
    def __init__(self, config, options):
        self.config, self.options = config, options

def hourly_price(config, spec):
    return 1.25

class NimbusOffers:
    def __init__(self, api_key=None, api_url=None):
        self.api_key, self.api_url = api_key, api_url

@attrs.define
class NimbusSweeper(KeyedSweeper):
    name: str = "Nimbus"
    account = ACCOUNT
    api = "nimbus_cloud:NimbusAPI"
    listing = "the key lists the account's machines"

    async def rows(self, api):
        return await api.machines()

    async def row(self, api, machine_id):
        return None

    async def delete(self, api, machine_id):
        return None

    def machine(self, row, pool, node):
        return Machine(provider=self.name, pool=pool, node=node, id=row["id"], instance_type="?",
                       region="?", state="running")
"""


@pytest.fixture(autouse=True)
def nimbus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The cloud's module on the path (not imported), and neither of its variables set."""
    monkeypatch.delenv("NIMBUS_API_KEY", raising=False)
    monkeypatch.delenv("NIMBUS_API_URL", raising=False)
    declared = f"from skyward.providers.api_key import ApiKeyAccount\nACCOUNT = {ACCOUNT!r}\n"
    (tmp_path / "nimbus_cloud.py").write_text(declared + CLOUD)
    sys.path.insert(0, str(tmp_path))
    try:
        yield
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("nimbus_cloud", None)


@attrs.frozen(kw_only=True)
class Nimbus(ApiKeyConfig):
    cloud: ClassVar[ApiKeyCloud] = ApiKeyCloud(
        name="nimbus",
        account=ACCOUNT,
        provider="nimbus_cloud:NimbusProvider",
        hourly_price="nimbus_cloud:hourly_price",
        offers="nimbus_cloud:NimbusOffers",
        sweeper="nimbus_cloud:NimbusSweeper",
    )

    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("Nimbus"))
    region: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("Nimbus"))


# --- the account --------------------------------------------------------------------------------


def test_the_key_is_the_one_given_else_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NIMBUS_API_KEY", "from-the-variable")
    assert ACCOUNT.resolve("given") == "given"
    assert ACCOUNT.resolve(None) == "from-the-variable"


def test_no_key_is_an_error_naming_the_argument_the_variable_and_the_keys_page() -> None:
    with pytest.raises(
        sky.ConfigurationError, match=r"Nimbus\(api_key=...\).*NIMBUS_API_KEY.*nimbus.example/keys"
    ):
        ACCOUNT.resolve(None)


def test_a_command_without_a_pool_reads_the_url_variable_else_the_clouds_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ACCOUNT.env_url() == "https://api.nimbus.example/v1"
    monkeypatch.setenv("NIMBUS_API_URL", "http://127.0.0.1:9/v1")
    assert ACCOUNT.env_url() == "http://127.0.0.1:9/v1"


def test_what_is_missing_names_the_variable_and_how_to_give_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = ACCOUNT.missing(None)
    assert missing is not None
    assert str(missing) == "no NIMBUS_API_KEY (set it or pass Nimbus(api_key=...))"
    assert missing.looked == "looked in $NIMBUS_API_KEY"
    assert ACCOUNT.missing("given") is None
    monkeypatch.setenv("NIMBUS_API_KEY", "from-the-variable")
    assert ACCOUNT.missing(None) is None


# --- the config ---------------------------------------------------------------------------------


def test_building_a_config_imports_none_of_the_clouds_modules() -> None:
    config = Nimbus(api_key="nimbus-secret", region="r1")
    assert config.name == "nimbus"
    assert "nimbus_cloud" not in sys.modules
    assert "nimbus-secret" not in repr(config)


def test_the_config_builds_its_provider_and_offer_source_with_its_own_settings() -> None:
    config = Nimbus(api_key="k", api_url="http://127.0.0.1:9/v1/")
    provider: Any = config.create(sky.Options())
    assert provider.config is config and isinstance(provider.options, sky.Options)
    source: Any = config.offer_source()
    assert (source.api_key, source.api_url) == ("k", "http://127.0.0.1:9/v1")
    assert config.hourly_price(sky.Spec(provider=config)) == 1.25


def test_the_config_calls_its_url_or_the_clouds() -> None:
    assert Nimbus().url == "https://api.nimbus.example/v1"
    assert Nimbus(api_url="http://proxy.example/v1").url == "http://proxy.example/v1"


def test_missing_credentials_are_the_accounts_for_the_key_given() -> None:
    assert str(Nimbus().missing_credentials()) == "no NIMBUS_API_KEY (set it or pass Nimbus(api_key=...))"
    assert Nimbus(api_key="k").missing_credentials() is None


def test_credentials_say_where_the_key_is_and_a_check_lists_through_the_sweeper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Nimbus.credentials() == CredentialStatus(found=False, where="looked in $NIMBUS_API_KEY")
    monkeypatch.setenv("NIMBUS_API_KEY", "good")
    checked = Nimbus.credentials(check=True)
    assert (checked.verified, checked.detail) == (True, "the key lists the account's machines (2)")
    monkeypatch.setenv("NIMBUS_API_KEY", "refused")
    refused = Nimbus.credentials(check=True)
    assert (refused.verified, refused.detail) == (False, "Nimbus refused the key")


# --- the sweeper --------------------------------------------------------------------------------


def test_the_sweeper_lists_with_the_variables_key_at_the_url_variables_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    monkeypatch.setenv("NIMBUS_API_KEY", "good")
    monkeypatch.setenv("NIMBUS_API_URL", "http://127.0.0.1:9/v1")
    sweeper = importlib.import_module("nimbus_cloud").NimbusSweeper()
    api = sweeper.client()
    assert (api.key, api.url) == ("good", "http://127.0.0.1:9/v1")
    assert sweeper.credentials().where == "$NIMBUS_API_KEY"
    assert [m.id for m in sweeper.machines()] == ["m1"]


# --- the offer source and the price ---------------------------------------------------------------


class NimbusOffers(KeyedOffers):
    name = "nimbus"
    account = ACCOUNT

    def listing(self, api_key: str, url: str) -> list[Offer]:
        return [Offer(provider=self.name, instance_type=f"{api_key}@{url}")]


def test_an_offer_source_declared_by_its_account_reads_its_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    assert NimbusOffers().credentials().where == "looked in $NIMBUS_API_KEY"
    with pytest.raises(
        sky.ConfigurationError, match="NIMBUS_API_KEY.*create one at https://nimbus.example/keys"
    ):
        NimbusOffers().fetch()
    monkeypatch.setenv("NIMBUS_API_KEY", "k")
    monkeypatch.setenv("NIMBUS_API_URL", "http://127.0.0.1:9/v1")
    (offer,) = NimbusOffers().fetch()
    assert offer.instance_type == "k@http://127.0.0.1:9/v1"


class Listing:
    """An API client whose offers are given (an error: the listing fails)."""

    def __init__(self, rentals: list[Rental] | Exception) -> None:
        self.rentals, self.closed = rentals, False

    async def offers(self) -> list[Rental]:
        if isinstance(self.rentals, Exception):
            raise self.rentals
        return self.rentals

    async def close(self) -> None:
        self.closed = True


def _rental(price: float) -> Rental:
    return Rental(
        offer=Offer(provider="nimbus", instance_type=f"t{price}", on_demand_price=price), spot=False
    )


def test_the_price_is_the_first_offers_a_pool_would_take() -> None:
    api = Listing([_rental(2.0), _rental(1.0)])
    assert first_price(lambda: api, Listing.offers, cloud="nimbus", logger="nimbus") == 2.0
    assert api.closed


def test_no_offer_or_a_failed_listing_is_an_unknown_price_not_an_error() -> None:
    assert first_price(lambda: Listing([]), Listing.offers, cloud="nimbus", logger="nimbus") is None
    failing = Listing(RuntimeError("the API is down"))
    assert first_price(lambda: failing, Listing.offers, cloud="nimbus", logger="nimbus") is None
    assert failing.closed
