"""The kit of a cloud whose API takes one key (`ApiKeyAccount`, `KeyedSweeper`,
`KeyedOffers(account=)`, `first_price`): where the key and endpoint are found, and a sweeper and an
offer source that get them from one declaration; the sweeper lives in a small cloud module
written to disk, imported as a cloud package's would be."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

import skyward as sky
from skyward.extension.settings import api_url
from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer
from skyward.market.rental import Rental
from skyward.providers.api_key import ApiKeyAccount
from skyward.providers.calls import first_price
from skyward.providers.credentials import CredentialStatus
from skyward.providers.keyed_config import KeyedConfig

ACCOUNT = ApiKeyAccount(
    cloud="Nimbus",
    variable="NIMBUS_API_KEY",
    url="https://api.nimbus.example/v1",
    url_variable="NIMBUS_API_URL",
    keys_page="https://nimbus.example/keys",
)

#: The cloud's own module: an API client listing two machines (refusing the key "refused") and
#: the sweeper over it.
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


@attrs.frozen(kw_only=True)
class Nimbus(KeyedConfig):
    api_key: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("Nimbus"))

    account = ACCOUNT
    provider_name = "nimbus"


def test_a_config_naming_its_account_takes_its_name_variable_and_endpoint_from_it() -> None:
    assert (Nimbus.cloud, Nimbus.key_variable) == ("Nimbus", "NIMBUS_API_KEY")
    assert Nimbus().url == "https://api.nimbus.example/v1"
    assert Nimbus(api_url="http://proxy.example/v1/").url == "http://proxy.example/v1"
    assert str(Nimbus().missing_credentials()) == "no NIMBUS_API_KEY (set it or pass Nimbus(api_key=...))"


# --- the sweeper's credential check ---------------------------------------------------------------


def test_a_check_lists_through_the_sweeper_and_reports_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    sweeper = importlib.import_module("nimbus_cloud").NimbusSweeper()
    missing = CredentialStatus(found=False, where="looked in $NIMBUS_API_KEY")
    assert sweeper.verify(missing) == missing
    found = CredentialStatus(found=True, where="$NIMBUS_API_KEY")
    monkeypatch.setenv("NIMBUS_API_KEY", "good")
    checked = sweeper.verify(found)
    assert (checked.verified, checked.detail) == (True, "the key lists the account's machines (2)")
    monkeypatch.setenv("NIMBUS_API_KEY", "refused")
    refused = sweeper.verify(found)
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
