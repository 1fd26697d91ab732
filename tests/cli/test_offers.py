"""`sky offers` as a user runs it (a subprocess) against moto's EC2, the fake RunPod API and the fake
Vast.ai server, and `sky.offers` in process against the same: one catalog, the same offers.

moto prices every spot machine at $0.00001 and has no on-demand price list (as AWS's Price List
API is AWS's alone); RunPod's listing and Vast's offers are the fakes' (see offers_support.py).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import Sky, no_traceback
from moto_support import accelerated, moto_server, only_instance_types
from offers_support import RUNPOD_KEY, environment, searches, start_runpod, start_vast

import skyward as sky
from skyward import offers as sky_offers
from skyward import offers_async as sky_offers_async

#: The providers these tests give credentials to (other installed packages have none here).
CLOUDS = ("aws", "runpod", "vastai")


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """moto's EC2 with its accelerated types only: these tests ask for accelerators, and its
    whole catalog took seconds of CPU to list on every fetch."""
    with only_instance_types(accelerated), moto_server() as url:
        yield url


@pytest.fixture
def runpod(tmp_path: Path) -> Iterator[Any]:
    fake = start_runpod(tmp_path / "runpod")
    yield fake
    fake.stop()


@pytest.fixture
def vast(tmp_path: Path) -> Iterator[Any]:
    fake = start_vast(tmp_path / "vast")
    yield fake
    fake.stop()


@pytest.fixture
def clouds(sky: Sky, moto_url: str, runpod: Any, vast: Any) -> Sky:
    """`sky` with credentials for all three clouds."""
    sky.env.update(environment(moto_url, runpod, vast))
    return sky


def prices(offers: list[dict[str, Any]]) -> list[float]:
    return [o["price"] for o in offers]


def by_provider(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["provider"]: row for row in listing["providers"]}


def age_snapshot(sky: Sky, provider: str, seconds: float) -> None:
    """Make a provider's snapshot `seconds` older, as time would."""
    with sqlite3.connect(sky.home / "offers.sqlite3") as db:
        db.execute("UPDATE snapshots SET fetched_at = fetched_at - ? WHERE provider = ?", (seconds, provider))


def test_offers_for_an_accelerator_come_from_every_provider_with_credentials_cheapest_first(
    clouds: Sky,
) -> None:
    listing = clouds.json("offers", "--accelerator", "A100")
    offers = listing["offers"]
    assert {o["provider"] for o in offers} == {"aws", "runpod", "vastai"}
    assert {o["accelerator"] for o in offers} == {"A100"}
    assert prices(offers) == sorted(prices(offers))
    states = {p: row["state"] for p, row in by_provider(listing).items()}
    assert {p: states[p] for p in CLOUDS} == {"aws": "fresh", "runpod": "fresh", "vastai": "fresh"}
    assert {s for p, s in states.items() if p not in CLOUDS} <= {"skipped"}  # other packages, no key
    vast = [(o["instance_type"], o["spot_price"], o["on_demand_price"])
            for o in offers if o["provider"] == "vastai"]
    assert sorted(vast) == [("1x A100 PCIE", 0.6, 1.1), ("1x A100 SXM4", 0.7, 1.4)]
    runpod = {(o["instance_type"], o["region"]): o for o in offers if o["provider"] == "runpod"}
    assert runpod[("2x A100 PCIe", "COMMUNITY")]["spot_price"] == pytest.approx(2 * 0.82)


def test_sky_offers_in_python_returns_the_same_offers_as_the_command(
    clouds: Sky, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = clouds.json("offers", "--accelerator", "A100")["offers"]
    for name, value in clouds.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "own-home"))  # its own catalog, fetched afresh
    offers = sky.offers(accelerator="A100")
    assert [o.as_json() for o in offers.all()] == listed
    states = {s.provider: s.state for s in offers.status}
    assert {p: states[p] for p in CLOUDS} == {"aws": "fresh", "runpod": "fresh", "vastai": "fresh"}


def test_the_fluent_query_filters_orders_and_limits(
    clouds: Sky, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in clouds.env.items():
        monkeypatch.setenv(name, value)
    catalog = sky.offers(providers=["runpod", "vastai"])
    a100 = catalog.accelerator("a100", memory="80GB")
    assert a100.count() == len(a100.all()) > 2
    assert {o.provider for o in a100.all()} == {"runpod", "vastai"}
    cheapest = a100.on_demand().cheapest(2)
    assert [(o.provider, o.on_demand_price) for o in cheapest] == [("vastai", 1.1), ("runpod", 1.19)]
    most = a100.order_by("count").first()
    assert most is not None and most.accelerator_count == 8
    assert [o.accelerator_count for o in a100.accelerator_count(4).max_price(4.0).spot().all()] == [4.0, 4.0]
    assert catalog.accelerator("RTX 4090").region("US").provider("vastai").first().spot_price == 0.18  # type: ignore[union-attr]


def test_a_provider_that_errors_is_reported_and_the_others_still_answer(clouds: Sky) -> None:
    done = clouds("offers", "--accelerator", "A100", "--json", VAST_API_KEY="not-the-key")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert {o["provider"] for o in listing["offers"]} == {"aws", "runpod"}
    vast = by_provider(listing)["vastai"]
    assert vast["state"] == "failed" and "refused" in vast["error"]
    table = clouds("offers", "--accelerator", "A100", VAST_API_KEY="not-the-key")
    assert table.returncode == 0 and "vastai: could not list offers" in table.stderr and no_traceback(table)
    assert "runpod" in table.stdout and "aws" in table.stdout


def test_with_no_provider_to_ask_the_command_fails_saying_why(sky: Sky) -> None:
    done = sky("offers", "--accelerator", "A100")
    assert done.returncode == 1 and no_traceback(done)
    assert "no provider could list offers" in done.stderr
    assert "runpod: skipped, no credentials found" in done.stderr


def test_offers_are_refreshed_by_age_only(sky: Sky, vast: Any) -> None:
    sky.env.update(environment(None, None, vast))
    assert sky.json("offers", "--provider", "vastai")["providers"][0]["state"] == "fresh"
    asked = searches(vast)
    assert sky.json("offers", "--provider", "vastai")["providers"][0]["state"] == "cached"
    assert searches(vast) == asked, "a catalog younger than its ttl was fetched again"
    age_snapshot(sky, "vastai", 3601)  # Vast's prices are kept an hour
    assert sky.json("offers", "--provider", "vastai")["providers"][0]["state"] == "fresh"
    assert searches(vast) > asked


def test_fetch_refreshes_now(sky: Sky, vast: Any) -> None:
    sky.env.update(environment(None, None, vast))
    sky.json("offers", "--provider", "vastai")
    asked = searches(vast)
    listing = sky.json("offers", "fetch", "--provider", "vastai")
    states = [(p["provider"], p["state"], p["offers"]) for p in listing["providers"]]
    assert states == [("vastai", "fresh", 3)]
    assert searches(vast) > asked


def test_a_stale_catalog_is_used_and_marked_when_the_provider_cannot_be_reached(sky: Sky, vast: Any) -> None:
    sky.env.update(environment(None, None, vast))
    sky.json("offers", "--provider", "vastai")
    age_snapshot(sky, "vastai", 7200)
    done = sky("offers", "--provider", "vastai", "-a", "A100", "--json", VAST_API_KEY="refused-key")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert len(listing["offers"]) == 2
    status = listing["providers"][0]
    assert (status["state"], status["stale"], status["age_seconds"] >= 7200) == ("stale", True, True)
    assert "refused" in status["error"]
    table = sky("offers", "--provider", "vastai", VAST_API_KEY="refused-key")
    assert "STALE" in table.stderr and "A100 PCIE" in table.stdout
    fetch = sky("offers", "fetch", "--provider", "vastai", VAST_API_KEY="refused-key")
    assert fetch.returncode == 1 and "could not refresh: vastai" in fetch.stderr and no_traceback(fetch)


def test_summary_shows_the_cheapest_price_per_provider_for_each_accelerator(
    sky: Sky, runpod: Any, vast: Any
) -> None:
    sky.env.update(environment(None, runpod, vast))
    groups = {g["accelerator"]: g for g in sky.json("offers", "summary", "--count", "1")["accelerators"]}
    a100 = groups["A100"]
    assert [(p["provider"], p["cheapest"]) for p in a100["providers"]] == [("vastai", 0.6), ("runpod", 0.82)]
    assert a100["cheapest"] == 0.6
    on_demand = sky.json("offers", "summary", "--on-demand", "-a", "A100")["accelerators"]
    cheapest = [(p["provider"], p["cheapest"]) for p in on_demand[0]["providers"]]
    assert cheapest == [("vastai", 1.1), ("runpod", 1.19)]


def test_the_original_spelling_offers_list_takes_the_same_options(sky: Sky, vast: Any) -> None:
    sky.env.update(environment(None, None, vast))
    short = sky.json("offers", "--provider", "vastai", "--limit", "1", "--sort", "price")
    spelled = sky.json("offers", "list", "--provider", "vastai", "--limit", "1")
    before = sky.json("offers", "--provider", "vastai", "list", "--limit", "1")  # options before `list`
    assert short["offers"] == spelled["offers"] == before["offers"] and len(short["offers"]) == 1
    assert short["offers"][0]["instance_type"] == "1x RTX 4090"


def test_spot_and_on_demand_exclude_each_other(sky: Sky) -> None:
    done = sky("offers", "--spot", "--on-demand")
    assert done.returncode == 2 and no_traceback(done)


def test_an_unknown_provider_is_an_error_naming_the_installed_ones(sky: Sky) -> None:
    done = sky("offers", "--provider", "nimbus", RUNPOD_API_KEY=RUNPOD_KEY)
    assert done.returncode == 1 and no_traceback(done)
    assert "no provider nimbus lists offers" in done.stderr and "runpod" in done.stderr


def test_the_async_twin_and_a_file_only_read_give_the_same_offers(
    sky: Sky, vast: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {**environment(None, None, vast), "SKYWARD_HOME": str(sky.home)}.items():
        monkeypatch.setenv(name, value)
    fetched = asyncio.run(sky_offers_async(providers=["vastai"], accelerator="A100"))
    asked = searches(vast)
    on_file = sky_offers(providers=["vastai"], accelerator="A100", refresh=False)
    assert [o.as_json() for o in on_file] == [o.as_json() for o in fetched.all()] and len(on_file.all()) == 2
    assert [s.state for s in on_file.status] == ["cached"] and searches(vast) == asked
