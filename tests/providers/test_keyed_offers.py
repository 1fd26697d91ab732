"""`KeyedOffers`, the offer source of a cloud whose API takes one key: where it reads from and
where its key is, told without reading the key; the key resolved only to fetch."""

from __future__ import annotations

import pytest

import skyward as sky
from skyward.market.keyed_offers import KeyedOffers
from skyward.market.offer import Offer


class NimbusOffers(KeyedOffers):
    name = "nimbus"
    cloud = "Nimbus"
    default_url = "https://api.nimbus.example/v1"
    url_variable = "NIMBUS_API_URL"
    key_variable = "NIMBUS_API_KEY"
    key_hint = "create one in the Nimbus console"

    def listing(self, api_key: str, url: str) -> list[Offer]:
        return [Offer(provider=self.name, instance_type=f"{api_key}@{url}")]


@pytest.fixture(autouse=True)
def _no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NIMBUS_API_KEY", raising=False)
    monkeypatch.delenv("NIMBUS_API_URL", raising=False)


def test_the_endpoint_is_the_configs_else_the_variables_else_the_clouds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert NimbusOffers().key == "https://api.nimbus.example/v1"
    monkeypatch.setenv("NIMBUS_API_URL", "http://127.0.0.1:9/v1")
    assert NimbusOffers().key == "http://127.0.0.1:9/v1"
    assert NimbusOffers(api_url="http://proxy.example/v1").key == "http://proxy.example/v1"


def test_a_given_key_is_found_in_the_config_and_kept_out_of_repr() -> None:
    source = NimbusOffers(api_key="nimbus-secret-key")
    assert source.credentials().where == "Nimbus(api_key=...)"
    assert "nimbus-secret-key" not in repr(source)


def test_without_a_key_the_variable_is_where_it_is_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    assert NimbusOffers().credentials().found is False
    monkeypatch.setenv("NIMBUS_API_KEY", "from-the-variable")
    assert NimbusOffers().credentials().where == "$NIMBUS_API_KEY"
    (offer,) = NimbusOffers().fetch()
    assert offer.instance_type == "from-the-variable@https://api.nimbus.example/v1"


def test_fetching_without_a_key_names_the_variable_and_where_to_get_one() -> None:
    with pytest.raises(sky.ConfigurationError, match="NIMBUS_API_KEY.*create one in the Nimbus console"):
        NimbusOffers().fetch()
