"""`Spend`: the estimate of what a pool's machines cost, shown when the pool closes."""

from __future__ import annotations

import pytest

from skyward.client.spend import Spend
from skyward.providers.base import Instance


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_machine_costs_its_hourly_rate_for_the_time_it_was_held() -> None:
    clock = Clock()
    spend = Spend(clock)
    cheap, dear = Instance(id="a", node=0, hourly_rate=1.0), Instance(id="b", node=1, hourly_rate=4.0)
    spend.started([cheap, dear])
    clock.now += 1800  # half an hour
    spend.stopped([dear])
    clock.now += 1800
    spend.stopped([cheap])
    assert spend.usd == pytest.approx(1.0 + 2.0)


def test_machines_still_running_count_up_to_now() -> None:
    clock = Clock()
    spend = Spend(clock)
    spend.started([Instance(id="a", node=0, hourly_rate=2.0)])
    clock.now += 900
    assert spend.usd == pytest.approx(0.5)


def test_a_machine_let_go_twice_or_never_held_costs_nothing_more() -> None:
    clock = Clock()
    spend = Spend(clock)
    machine = Instance(id="a", node=0, hourly_rate=2.0)
    spend.stopped([machine])
    spend.started([machine])
    clock.now += 3600
    spend.stopped([machine])
    clock.now += 3600
    spend.stopped([machine])
    assert spend.usd == pytest.approx(2.0)
