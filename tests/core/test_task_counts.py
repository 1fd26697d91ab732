"""The console reads a pool's tasks as counts (the bus's `TaskTally`), so the default console costs
a pool no event per task, and every task is still counted once, whichever way it went."""

from __future__ import annotations

import io
import re
import time

import pytest

import skyward as sky
from skyward.observe import events as ev
from skyward.observe.bus import EventBus
from skyward.observe.console import Console


@sky.function
def one() -> int:
    return 1


@sky.function
def boom() -> None:
    raise ValueError("boom")


def double(x: int) -> int:
    return 2 * x


def _log_pool() -> sky.Compute:
    return sky.Compute(provider=sky.Local(), nodes=2, console="log", logging=False)


@pytest.mark.parametrize("mode", ["log", "minimal", "rich"])
def test_a_console_alone_asks_the_pool_for_no_task_events(mode: str) -> None:
    bus = EventBus()
    Console(mode, stream=io.StringIO()).attach(bus)  # type: ignore[arg-type]
    assert not bus.listens(ev.TaskStarted) and not bus.listens(ev.TaskCompleted)
    assert bus.listens(ev.NodeReady) and bus.listens(ev.Metric)


def test_a_console_printing_each_task_gets_the_task_events() -> None:
    bus = EventBus()
    Console("log", stream=io.StringIO(), task_detail=True).attach(bus)  # type: ignore[arg-type]
    assert bus.listens(ev.TaskStarted) and bus.listens(ev.TaskCompleted)


def test_a_handler_subscribed_later_gets_the_events_from_then_on() -> None:
    bus = EventBus()
    Console("log", stream=io.StringIO()).attach(bus)  # type: ignore[arg-type]
    assert not bus.listens(ev.TaskCompleted)
    unsubscribe = bus.on(ev.TaskCompleted, lambda event: None)
    assert bus.listens(ev.TaskCompleted) and not bus.listens(ev.TaskStarted)
    unsubscribe()
    assert not bus.listens(ev.TaskCompleted)


def test_a_bus_counts_no_task_until_something_reads_its_counts() -> None:
    bus = EventBus()
    bus.tally.start()
    bus.tally.finish(True)
    assert (bus.tally.started, bus.tally.done) == (0, 0)
    Console("log", stream=io.StringIO()).attach(bus)  # type: ignore[arg-type]
    bus.tally.start()
    bus.tally.finish(True)
    assert (bus.tally.started, bus.tally.done, bus.tally.running) == (1, 1, 0)


def test_the_log_console_counts_a_pools_tasks_and_prints_each_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _log_pool() as pool:
        for _ in range(5):
            assert one() >> pool == 1
        assert pool.map(double, range(6)) == [0, 2, 4, 6, 8, 10]
        with pytest.raises(Exception, match="boom"):
            boom() >> pool
    err = capsys.readouterr().err
    assert re.search(r"ERROR task boom#\d+ failed on node \d after .*ValueError", err), err
    assert "tasks: 11 done, 1 failed" in err, err
    assert "one#" not in err


def test_a_task_whose_events_a_handler_wants_is_counted_once(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[sky.TaskCompleted] = []
    with _log_pool() as pool:
        for _ in range(3):
            one() >> pool  # counted by the node: nothing wants the events yet
        pool.on(sky.TaskCompleted, seen.append)
        for _ in range(3):
            one() >> pool  # built for the handler, counted by the bus as it passes
    assert len(seen) == 3
    assert "tasks: 6 done, 0 failed" in capsys.readouterr().err


def test_the_rich_spinner_reads_the_running_count_as_it_draws() -> None:
    from rich.console import Console as RichConsole

    from skyward.observe.live import LiveArea

    running = [3]
    since = time.time() - 2
    area = LiveArea(RichConsole(file=io.StringIO(), width=120),
                    status=lambda: (f"{running[0]} task(s) running", since))
    try:
        screens = []
        for count in (3, 5):
            running[0] = count
            screen = io.StringIO()
            RichConsole(file=screen, width=120, color_system=None).print(area)
            screens.append(screen.getvalue())
    finally:
        area.stop()
    # The elapsed time is the clock's, read as it draws: 2.0s, or 2.1s on a loaded machine.
    assert re.search(r"3 task\(s\) running · 2\.\ds", screens[0]), screens
    assert re.search(r"5 task\(s\) running · 2\.\ds", screens[1]), screens
