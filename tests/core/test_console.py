"""The console turns bus events into lines a person (or an agent polling a file) can follow."""

from __future__ import annotations

import io
import re
import threading
import time

import pytest

import skyward as sky
from skyward.observe import events as ev
from skyward.observe.console import Console, format_duration, resolve_mode


class TTYStringIO(io.StringIO):
    """A captured stream that claims to be a terminal, so "rich" stays rich."""

    def isatty(self) -> bool:
        return True


def _run(mode: str, events: list[ev.Event], stream: io.StringIO | None = None) -> str:
    stream = stream if stream is not None else io.StringIO()
    bus = ev.EventBus()
    console = Console(mode, stream=stream)  # type: ignore[arg-type]
    console.attach(bus)
    try:
        for event in events:
            bus.emit(event)
    finally:
        console.close()
    return stream.getvalue()


def _lifecycle() -> list[ev.Event]:
    return [
        ev.ClusterRequested(pool="p1", spec_summary="1x A100 on aws", nodes=2, time=1000.0),
        ev.InstanceProvisioned(node=0, instance_id="i-0"),
        ev.InstanceProvisioned(node=1, instance_id="i-1"),
        ev.BootstrapPhase(node=0, phase="pip", event="started"),
        ev.BootstrapPhase(node=0, phase="pip", event="completed", seconds=3.0),
        ev.InstanceBootstrapped(node=0),
        ev.NodeReady(node=0),
        ev.NodeReady(node=1),
        ev.ClusterReady(nodes=2, seconds=42.0),
        ev.TaskStarted(task_id=1, name="train", node=1),
        ev.Log(node=1, line="hello"),
        ev.TaskCompleted(task_id=1, name="train", node=1, success=True, duration=0.5),
        ev.ClusterDestroyed(time=1083.0),
    ]


@pytest.mark.parametrize("mode", ["rich", "minimal", "log"])
def test_remote_log_lines_are_printed_with_node_prefix_in_every_visible_mode(mode: str) -> None:
    stream = TTYStringIO() if mode == "rich" else io.StringIO()
    assert "[node 1] hello" in _run(mode, [ev.Log(node=1, line="hello")], stream)


def test_silent_mode_prints_nothing() -> None:
    assert _run("silent", _lifecycle()) == ""


def test_log_mode_lines_start_with_time_and_level() -> None:
    out = _run("log", _lifecycle())
    for line in out.splitlines():
        assert re.match(r"^\d\d:\d\d:\d\d (INFO |WARN |ERROR) \S", line), line


def test_log_mode_reports_node_counts() -> None:
    out = _run("log", _lifecycle())
    assert "provisioned 2/2 node(s)" in out
    assert "ready 1/2 node(s)" in out
    assert "ready 2/2 node(s)" in out


def test_log_mode_reports_bootstrap_phases() -> None:
    out = _run("log", _lifecycle())
    assert "node 0: bootstrap pip..." in out
    assert "node 0: bootstrap pip done in 3.0s" in out


def test_pool_requested_line_names_pool_and_spec() -> None:
    assert "pool p1 requested: 2 node(s) (1x A100 on aws)" in _run("log", _lifecycle())


def test_pool_destroyed_line_reports_total_time_since_request() -> None:
    assert "pool destroyed after 1m 23s" in _run("log", _lifecycle())


def test_pool_destroyed_line_prefers_reported_seconds_and_cost() -> None:
    out = _run("minimal", [ev.ClusterDestroyed(seconds=5.0, cost=1.234)])
    assert "pool destroyed after 5.0s, ~$1.23" in out


def test_minimal_mode_shows_only_milestones() -> None:
    out = _run("minimal", _lifecycle())
    assert out.splitlines() == [
        "pool p1 requested: 2 node(s) (1x A100 on aws)",
        "pool ready: 2 node(s) in 42.0s",
        "[node 1] hello",
        "pool destroyed after 1m 23s",
    ]


def test_task_failure_is_shown_in_minimal_mode() -> None:
    failed = ev.TaskCompleted(
        task_id=7, name="train", node=0, success=False, duration=1.0, error="ValueError: x"
    )
    assert "task train#7 failed on node 0 after 1.0s: ValueError: x" in _run("minimal", [failed])


def test_log_mode_marks_task_failure_as_error() -> None:
    failed = ev.TaskCompleted(task_id=7, name="train", node=0, success=False, duration=1.0, error="boom")
    assert " ERROR task train#7 failed" in _run("log", [failed])


def test_bootstrap_error_shows_output_tail() -> None:
    error = ev.BootstrapError(node=1, phase="apt", command="apt-get install x", output_tail="E: one\nE: two")
    out = _run("minimal", [error])
    assert "node 1: bootstrap failed in apt" in out
    assert "    E: two" in out


def test_preemption_is_a_warning() -> None:
    assert " WARN  node 0: preempted: spot reclaimed" in _run(
        "log", [ev.InstancePreempted(node=0, reason="spot reclaimed")]
    )


def test_a_worker_restarted_on_the_same_machine_is_not_called_a_replacement() -> None:
    out = _run("log", [ev.InstanceReplaced(node=0, old_id="i-0", new_id="i-0")])
    assert " INFO  node 0: worker restarted on i-0\n" in out
    assert "replaced" not in out


def test_a_machine_replaced_by_another_names_both() -> None:
    out = _run("log", [ev.InstanceReplaced(node=0, old_id="i-0", new_id="i-1")])
    assert " WARN  node 0: machine i-0 replaced by i-1\n" in out


def test_a_worker_the_pool_restarts_is_reported_with_its_reason_not_as_lost() -> None:
    out = _run("minimal", [ev.NodeLost(node=0, reason="task f#3 ran past its timeout", restart=True)])
    assert "node 0: task f#3 ran past its timeout\n" in out
    assert "lost" not in out


@sky.function
def sleep_in_c(seconds: float) -> None:
    time.sleep(seconds)  # no cancel reaches a thread blocked in C: only ending its process stops it


@pytest.mark.timeout(60)
def test_a_task_past_its_timeout_that_will_not_stop_is_reported_as_a_worker_restart(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with sky.Compute(provider=sky.Local(), nodes=1, console="log", logging=False) as pool:
        restarted = threading.Event()
        pool.on(sky.InstanceReplaced, lambda event: restarted.set())
        with pytest.raises(TimeoutError):
            sleep_in_c(60).with_timeout(1) >> pool
        assert restarted.wait(15)
    err = capsys.readouterr().err
    said = (
        r" WARN  node 0: task sleep_in_c#\d+ ran past its 1s timeout and did not stop when cancelled, "
        r"so its worker process is restarted\n"
    )
    assert re.search(said, err), err
    assert re.search(r" INFO  node 0: worker restarted on \S+\n", err), err
    assert "replaced" not in err and "lost" not in err


def test_rich_falls_back_to_log_when_stream_is_not_a_tty() -> None:
    assert Console("rich", stream=io.StringIO()).mode == "log"


def test_rich_stays_rich_on_a_terminal() -> None:
    console = Console("rich", stream=TTYStringIO())
    assert console.mode == "rich"
    console.close()


def test_rich_mode_prints_milestones_on_a_terminal() -> None:
    out = _run("rich", _lifecycle(), TTYStringIO())
    assert "pool ready: 2 node(s) in 42.0s" in out
    assert "pool destroyed after 1m 23s" in out


def test_rich_mode_does_not_read_brackets_in_remote_lines_as_markup() -> None:
    out = _run("rich", [ev.Log(node=0, line="[bold]x[/bold] [1, 2]")], TTYStringIO())
    assert "[node 0] [bold]x[/bold] [1, 2]" in out


def test_console_true_means_rich_and_false_means_silent() -> None:
    assert resolve_mode(True, TTYStringIO()) == "rich"
    assert resolve_mode(False, TTYStringIO()) == "silent"


def test_unknown_console_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="console mode"):
        Console("fancy", stream=io.StringIO())  # type: ignore[arg-type]


def test_detached_console_stops_printing() -> None:
    stream = io.StringIO()
    bus = ev.EventBus()
    detach = Console("log", stream=stream).attach(bus)
    detach()
    bus.emit(ev.Log(node=0, line="late"))
    assert stream.getvalue() == ""


@pytest.mark.parametrize(
    ("seconds", "text"), [(4.23, "4.2s"), (187, "3m 07s"), (3720, "1h 02m")]
)
def test_format_duration_is_short(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
