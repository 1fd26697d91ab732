"""A pool on the fake Vast: instances rented, reached over SSH with a pinned host key, destroyed."""

from __future__ import annotations

from pathlib import Path

import pytest
from vast_server import FakeVast
from vast_support import API_KEY, vast_pool, vast_provider

import skyward as sky
from skyward.errors import HostKeyError


@sky.function
def square(x: int) -> int:
    return x * x


@sky.function
def node_number() -> int:
    return sky.instance_info().node


def test_a_two_node_pool_runs_tasks_and_broadcasts_then_destroys_every_instance(vast: FakeVast) -> None:
    with vast_pool(vast, nodes=2, accelerator="RTX 4090") as pool:
        assert square(7) >> pool == 49
        assert sorted(node_number() @ pool) == [0, 1]
        assert len(vast.live) == 2
        homes = [i.server.home for i in vast.live if i.server is not None]
    assert vast.live == []
    assert len(vast.destroyed) == 2
    from ssh_hosts import workers_of

    assert all(workers_of(home) == [] for home in homes)


def test_each_node_is_rented_on_a_different_machine_with_the_pool_in_its_label(vast: FakeVast) -> None:
    with vast_pool(vast, nodes=2, accelerator="RTX 4090") as pool:
        machines = {i.offer["machine_id"] for i in vast.live}
        labels = sorted(i.request["label"] for i in vast.live)
    assert len(machines) == 2
    prefix = f"skyward-{pool.name}-node-"
    assert [label.split("@")[0] for label in labels] == [f"{prefix}0", f"{prefix}1"]


def test_an_offer_taken_by_someone_else_is_skipped_for_the_next_one(vast: FakeVast) -> None:
    vast.taken.add(1)  # the cheapest offer is rented away between the search and the rent
    with vast_pool(vast, nodes=1, accelerator="RTX 4090") as pool:
        assert square(3) >> pool == 9
        assert [i.offer["id"] for i in vast.live] == [2]
    assert [body.get("price") for body in vast.created] == [None, None]
    assert vast.live == []


def test_spot_if_available_bids_first_and_falls_back_to_on_demand_when_bids_are_taken(
    vast: FakeVast,
) -> None:
    vast.taken.update({1, 2, 3, 4})
    vast.offers.append({**vast.offers[0], "id": 9, "machine_id": 109, "min_bid": 5.0, "dph_total": 0.9})
    compute = vast_pool(
        vast, nodes=1, accelerator="RTX 4090", allocation="spot-if-available", max_hourly_cost=1.0
    )
    with compute:
        rented = vast.live[0]
        assert rented.offer["id"] == 9
        assert rented.request.get("price") is None  # on-demand: no bid
    prices = [body.get("price") for body in vast.created]
    assert all(p is not None and p < 1.0 for p in prices[:4])  # every bid tried first...
    assert prices[-1] is None  # ...then on-demand


def test_a_machine_answering_with_another_host_key_is_refused_and_destroyed(vast: FakeVast) -> None:
    vast.foreign_host_key = True
    compute = vast_pool(vast, nodes=1, provider=vast_provider(vast, host_key_grace=0.5), ssh_timeout=5)
    with pytest.raises(HostKeyError), compute:
        pass
    assert vast.live == []
    assert len(vast.destroyed) == 1


def test_the_api_key_appears_in_no_log_line_or_event(vast: FakeVast, tmp_path: Path) -> None:
    events: list[sky.Event] = []
    log = tmp_path / "skyward.log"
    logging = sky.LogConfig(level="DEBUG", file=str(log), console=False)
    with vast_pool(vast, nodes=1, logging=logging, on_event=events.append) as pool:
        assert square(2) >> pool == 4
    assert all(auth == f"Bearer {API_KEY}" for *_, auth in vast.requests)  # it was used...
    text = log.read_text()
    assert "vastai_rented" in text
    assert API_KEY not in text  # ...and never written down
    assert events and not any(API_KEY in repr(e) for e in events)
