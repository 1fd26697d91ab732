"""`Options(selection="cheapest")` orders a pool's specs by the offer catalog `sky offers` shows,
so what the command says is cheapest is what a pool tries first; `max_hourly_cost` is read from
the same offers. The specs are priced as a pool prices them (`client.fleet_plan.in_selection_order`)
against the fake RunPod API and the fake Vast.ai server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import structlog
from offers_support import RUNPOD_KEY, VAST_KEY, environment, start_runpod, start_vast, vast_offers

import skyward as sky
from skyward.client.fleet_plan import in_selection_order


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    runpod, vast = start_runpod(tmp_path / "runpod"), start_vast(tmp_path / "vast")
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "home"))
    for name, value in environment(None, runpod, vast).items():
        monkeypatch.setenv(name, value)
    yield runpod, vast
    runpod.stop()
    vast.stop()


def specs(runpod: Any, vast: Any, **spec: Any) -> tuple[sky.Spec, sky.Spec]:
    """An A100 node on RunPod (secure cloud: $0.95/h interruptible) and one on Vast.ai."""
    on_runpod = sky.RunPod(api_key=RUNPOD_KEY, api_url=runpod.rest_url, graphql_url=runpod.graphql_url)
    on_vast = sky.VastAI(api_key=VAST_KEY, server_url=vast.url)
    return (sky.Spec(provider=on_runpod, accelerator="A100", **spec),
            sky.Spec(provider=on_vast, accelerator="A100", **spec))


def picked(specs: tuple[sky.Spec, ...]) -> list[str]:
    """The providers in the order a pool with `selection="cheapest"` would try them."""
    ordered = asyncio.run(in_selection_order(specs, "cheapest", structlog.get_logger("test")))
    return [spec.provider.name for spec in ordered]  # type: ignore[union-attr]


def test_the_pool_tries_first_the_provider_the_catalog_says_is_cheapest(fakes: tuple[Any, Any]) -> None:
    runpod, vast = fakes
    shown = sky.offers(accelerator="A100").cheapest()
    assert shown is not None and (shown.provider, shown.spot_price) == ("vastai", 0.6)
    assert picked(specs(runpod, vast)) == ["vastai", "runpod"]


def test_the_pool_reads_the_catalog_not_a_price_of_its_own(fakes: tuple[Any, Any]) -> None:
    runpod, vast = fakes
    vast.offers[:] = vast_offers(((11, "A100 SXM4", 3.0, 2.5),))  # dearer than RunPod's $0.95
    sky.offers(refresh=True)
    vast.offers[:] = vast_offers(((11, "A100 SXM4", 0.3, 0.1),))  # cheaper now, but not in the catalog yet
    assert picked(specs(runpod, vast)) == ["runpod", "vastai"]
    assert sky.offers(accelerator="A100", refresh=True).cheapest().provider == "vastai"  # type: ignore[union-attr]
    assert picked(specs(runpod, vast)) == ["vastai", "runpod"]


def test_a_spec_whose_offers_all_cost_more_than_its_max_hourly_cost_goes_last(fakes: tuple[Any, Any]) -> None:
    runpod, vast = fakes
    on_runpod, on_vast = specs(runpod, vast)
    capped = attrs.evolve(on_vast, max_hourly_cost=0.5)  # Vast's A100s start at $0.60
    assert picked((on_runpod, capped)) == ["runpod", "vastai"]
    assert picked((on_runpod, attrs.evolve(on_vast, max_hourly_cost=0.65))) == ["vastai", "runpod"]


def test_the_allocation_prices_the_spec_as_the_catalog_prices_it(fakes: tuple[Any, Any]) -> None:
    runpod, vast = fakes
    # On demand, RunPod's secure A100 PCIe is $1.64 and Vast's cheapest $1.10.
    assert picked(specs(runpod, vast, allocation="on-demand")) == ["vastai", "runpod"]
    cheapest = sky.offers(accelerator="A100", allocation="on-demand", provider="vastai").cheapest()
    assert cheapest is not None and cheapest.on_demand_price == 1.1
