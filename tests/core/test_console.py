"""The console turns bus events into lines a person (or an agent polling a file) can follow."""

from __future__ import annotations

import io
import re
import threading
import time

import pytest

import skyward as sky
from skyward.observe import events as ev
from skyward.observe.bus import EventBus
from skyward.observe.console import Console, format_duration, resolve_mode


class TTYStringIO(io.StringIO):
    """A captured stream that claims to be a terminal, so "rich" stays rich."""

    def isatty(self) -> bool:
        return True


def _run(mode: str, events: list[ev.Event], stream: io.StringIO | None = None) -> str:
    stream = stream if stream is not None else io.StringIO()
    bus = EventBus()
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


def test_a_lingering_pools_end_line_says_its_machines_are_still_up() -> None:
    reason = "linger 600 s for the next pool with this spec"
    out = _run("minimal", [ev.ClusterDestroyed(seconds=5.0, reason=reason)])
    assert "pool ended after 5.0s; its machines linger 600 s for the next pool with this spec" in out
    assert "destroyed" not in out


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
    bus = EventBus()
    detach = Console("log", stream=stream).attach(bus)
    detach()
    bus.emit(ev.Log(node=0, line="late"))
    assert stream.getvalue() == ""


@pytest.mark.parametrize(
    ("seconds", "text"), [(4.23, "4.2s"), (187, "3m 07s"), (3720, "1h 02m")]
)
def test_format_duration_is_short(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


# --- metrics, the summary, the live area ---------------------------------------------------------------


def _metrics(node: int, at: float, cpu: float, memory: float = 40.0) -> list[ev.Event]:
    """One batch of a node's figures: its samples share the moment they were taken."""
    return [
        ev.Metric(node=node, name="cpu", value=cpu, unit="%", time=at),
        ev.Metric(node=node, name="memory", value=memory, unit="%", time=at),
    ]


def test_log_mode_writes_each_nodes_metrics_at_most_every_30_seconds() -> None:
    batches = [m for t in range(0, 62, 2) for m in _metrics(0, 1000.0 + t, cpu=float(t))]
    lines = [line for line in _run("log", batches).splitlines() if " metrics " in line]
    assert [line.split("INFO  ", 1)[1] for line in lines] == [
        "metrics node 0: cpu 0%, memory 40%",
        "metrics node 0: cpu 30%, memory 40%",
    ]


def test_rich_and_minimal_modes_print_no_metric_lines() -> None:
    batches = [m for t in range(0, 62, 2) for m in _metrics(0, 1000.0 + t, cpu=50.0)]
    assert "cpu" not in _run("minimal", batches)
    assert "metrics node" not in _run("rich", batches, TTYStringIO())


def test_the_end_summary_gives_tasks_and_each_nodes_mean_and_peak_use() -> None:
    events = _lifecycle()
    figures = [*_metrics(0, 1001.0, cpu=20.0), *_metrics(0, 1003.0, cpu=80.0), *_metrics(1, 1001.0, cpu=10.0)]
    out = _run("log", [*events[:-1], *figures, events[-1]])
    tail = [line.split("INFO  ", 1)[1] for line in out.splitlines()[-4:]]
    assert tail == [
        "pool destroyed after 1m 23s",
        "tasks: 1 done, 0 failed",
        "node 0: cpu 50% avg, 80% peak; mem 40% avg, 40% peak",
        "node 1: cpu 10% avg, 10% peak; mem 40% avg, 40% peak",
    ]


def test_the_live_area_shows_how_long_a_step_has_lasted_and_a_row_per_node() -> None:
    from rich.console import Console as RichConsole

    from skyward.observe.dashboard import Meters
    from skyward.observe.live import LiveArea, View

    meters = Meters()
    for event in [*_metrics(0, 1.0, cpu=10.0), *_metrics(0, 2.0, cpu=90.0)]:
        meters.record(event)  # type: ignore[arg-type]
    screen = io.StringIO()
    area = LiveArea(RichConsole(file=io.StringIO(), width=120))
    try:
        now = time.time()
        area.show(View(status="pool: ready 0/2", since=now - 65, phases=((1, "pip", now - 41.5),),
                       rows=tuple(meters.rows())))
        RichConsole(file=screen, width=120, color_system=None).print(area)
    finally:
        area.stop()
    text = screen.getvalue()
    assert "pool: ready 0/2 (node 1: pip 41.5s) · 1m 05s" in text, text
    assert "node 0  cpu ▂▇" in text and " 90%" in text and "mem ▄▄" in text, text


# -- tasks: counted, not narrated ------------------------------------------------------------------


def _task_events(count: int, start: float = 1000.0, step: float = 0.01) -> list[ev.Event]:
    events: list[ev.Event] = []
    for i in range(count):
        at = start + i * step
        events.append(ev.TaskStarted(task_id=i, name="noop", node=0, time=at))
        events.append(ev.TaskCompleted(task_id=i, name="noop", node=0, success=True, duration=0.001, time=at))
    return events


def test_log_mode_prints_no_line_per_task_but_a_progress_line_now_and_then() -> None:
    # 1,000 tasks over 10 s: a progress line every 5 s, none per task
    out = _run("log", _task_events(1000))
    assert "noop#" not in out
    progress = re.findall(r"tasks: ([\d,]+) done, 0 failed, \d+ running \(([\d,]+)/s\)", out)
    assert len(progress) == 1, out
    assert progress[0][1] == "100", out


def test_a_failed_task_is_printed_at_once_among_counted_tasks() -> None:
    failed = ev.TaskCompleted(
        task_id=7, name="boom", node=1, success=False, duration=0.5, error="ValueError: x"
    )
    out = _run("log", [*_task_events(3), ev.TaskStarted(task_id=7, name="boom", node=1), failed])
    assert re.search(r"ERROR task boom#7 failed on node 1 after .*ValueError: x", out), out
    assert "noop#" not in out


def test_task_detail_prints_each_tasks_start_and_end() -> None:
    stream = io.StringIO()
    bus = EventBus()
    console = Console("log", stream=stream, task_detail=True)
    console.attach(bus)
    for event in _task_events(2):
        bus.emit(event)
    out = stream.getvalue()
    assert "task noop#0 started on node 0" in out and "task noop#1 done on node 0" in out


def test_a_pool_logging_at_debug_prints_each_task(capsys: pytest.CaptureFixture[str]) -> None:
    @sky.function
    def one() -> int:
        return 1

    options = sky.Options(console="log", logging=sky.LogConfig(level="DEBUG", file=None))
    with sky.Compute(provider=sky.Local(), options=options) as pool:
        assert one() >> pool == 1
    assert re.search(r"task one#\d+ done on node 0", capsys.readouterr().err)
