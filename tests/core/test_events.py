"""Events are frozen records matched structurally; the bus delivers them in order, past bad handlers."""

from __future__ import annotations

import threading
import time

import attrs
import pytest
import structlog

import skyward as sky
from skyward.errors import BootstrapFailed
from skyward.observe import events as ev
from skyward.observe.bus import EventBus, redact
from skyward.secrets import mask_secrets
from skyward.task.instance import InstanceInfo


def _describe(event: ev.Event) -> str:
    """The matching code from the docs' "Events and Callbacks" section."""
    match event:
        case ev.Metric(instance=inst, name="gpu_utilization", value=v):
            return f"Node {inst.node} GPU: {v}%"
        case ev.Log(line=line):
            return f"[remote] {line}"
        case ev.TaskCompleted(success=True, duration=d):
            return f"Task completed in {d:.2f}s"
        case ev.BootstrapPhase(phase=p, event="completed"):
            return f"Bootstrap phase '{p}' completed"
    return "other"


def test_log_event_matches_by_keyword_pattern() -> None:
    assert _describe(ev.Log(node=1, line="hello")) == "[remote] hello"


def test_task_completed_matches_success_and_duration() -> None:
    event = ev.TaskCompleted(task_id=1, name="train", node=0, success=True, duration=1.5)
    assert _describe(event) == "Task completed in 1.50s"


def test_failed_task_does_not_match_success_pattern() -> None:
    event = ev.TaskCompleted(task_id=1, name="train", node=0, success=False, duration=1.5, error="boom")
    assert _describe(event) == "other"


def test_metric_matches_instance_and_literal_name() -> None:
    info = InstanceInfo(node=2, total_nodes=4)
    event = ev.Metric(instance=info, node=2, name="gpu_utilization", value=87.0)
    assert _describe(event) == "Node 2 GPU: 87.0%"


def test_bootstrap_phase_matches_completed_event() -> None:
    assert _describe(ev.BootstrapPhase(node=0, phase="pip", event="completed", seconds=2.0)) == (
        "Bootstrap phase 'pip' completed"
    )


def test_events_are_frozen() -> None:
    event = ev.NodeReady(node=0)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.node = 1  # type: ignore[misc]


def test_every_event_carries_pool_and_time() -> None:
    before = time.time()
    event = ev.ClusterRequested(pool="p-1", spec_summary="1x A100", nodes=2)
    assert event.pool == "p-1"
    assert before <= event.time <= time.time()


def test_bootstrap_failure_event_is_distinct_from_the_exception() -> None:
    event = ev.BootstrapPhaseFailed(node=0, phase="pip", command="pip install x", output_tail="E: no")
    assert isinstance(event, ev.Event)
    assert not isinstance(event, BaseException)
    assert ev.BootstrapPhaseFailed is not BootstrapFailed


def test_an_error_report_is_an_event_not_an_exception() -> None:
    event = ev.ErrorReported(message="a replacement could not start", node=1)
    assert isinstance(event, ev.Event)
    assert not isinstance(event, BaseException)
    skipped = ev.SpecSkipped(message="skipping", provider="RunPod", reason="no key")
    assert isinstance(skipped, ev.ErrorReported)


def test_the_documented_names_are_the_same_event_classes() -> None:
    """`sky.Error` and `sky.BootstrapError`, as the reference pages first named them, still match."""
    assert sky.Error is sky.ErrorReported and sky.BootstrapError is sky.BootstrapPhaseFailed
    match ev.ErrorReported(message="m", fatal=True):
        case sky.Error(fatal=fatal):
            assert fatal


def test_mask_secrets_replaces_every_occurrence() -> None:
    assert mask_secrets("key=abc123 again abc123", ["abc123"]) == "key=*** again ***"


def test_mask_secrets_masks_longest_secret_whole() -> None:
    assert mask_secrets("token=abcdef", ["abc", "abcdef"]) == "token=***"


def test_mask_secrets_ignores_empty_secret() -> None:
    assert mask_secrets("nothing secret", [""]) == "nothing secret"


def test_redact_masks_string_fields() -> None:
    event = ev.BootstrapCommand(node=0, command="export HF_TOKEN=hf_secret_value && pip install x")
    assert redact(event, ["hf_secret_value"]).command == "export HF_TOKEN=*** && pip install x"


def test_redact_returns_same_event_when_nothing_to_mask() -> None:
    event = ev.Log(node=0, line="hello")
    assert redact(event, ["hf_secret_value"]) is event


def test_bus_delivers_to_handlers_of_matching_type() -> None:
    bus = EventBus()
    seen: list[ev.Event] = []
    bus.on(ev.Log, seen.append)
    bus.emit(ev.NodeReady(node=0))
    bus.emit(ev.Log(node=0, line="hi"))
    assert [type(e) for e in seen] == [ev.Log]


def test_bus_subscription_to_event_receives_everything() -> None:
    bus = EventBus()
    seen: list[ev.Event] = []
    bus.on(ev.Event, seen.append)
    bus.emit(ev.NodeReady(node=0))
    bus.emit(ev.Log(node=0, line="hi"))
    assert len(seen) == 2


def test_bus_calls_handlers_in_registration_order() -> None:
    bus = EventBus()
    order: list[str] = []
    bus.on(ev.Event, lambda e: order.append("first"))
    bus.on(ev.Log, lambda e: order.append("second"))
    bus.on(ev.Event, lambda e: order.append("third"))
    bus.emit(ev.Log(node=0, line="x"))
    assert order == ["first", "second", "third"]


def test_unsubscribe_stops_delivery() -> None:
    bus = EventBus()
    seen: list[ev.Event] = []
    unsubscribe = bus.on(ev.Event, seen.append)
    unsubscribe()
    unsubscribe()  # idempotent
    bus.emit(ev.NodeReady(node=0))
    assert seen == []


def test_unsubscribe_removes_only_its_own_registration() -> None:
    bus = EventBus()
    seen: list[ev.Event] = []
    first = bus.on(ev.Event, seen.append)
    bus.on(ev.Event, seen.append)
    first()
    bus.emit(ev.NodeReady(node=0))
    assert len(seen) == 1


def test_failing_handler_does_not_stop_other_handlers() -> None:
    bus = EventBus()
    seen: list[ev.Event] = []

    def broken(event: ev.Event) -> None:
        raise RuntimeError("boom")

    bus.on(ev.Event, broken)
    bus.on(ev.Event, seen.append)
    bus.emit(ev.NodeReady(node=0))  # must not raise
    assert len(seen) == 1


def test_failing_handler_is_logged_with_its_name() -> None:
    bus = EventBus()

    def broken_handler(event: ev.Event) -> None:
        raise RuntimeError("boom")

    bus.on(ev.Event, broken_handler)
    with structlog.testing.capture_logs() as logs:
        bus.emit(ev.NodeReady(node=0))
    [entry] = logs
    assert entry["event"] == "skyward.event_handler_failed"
    assert "broken_handler" in entry["handler"]
    assert entry["event_type"] == "NodeReady"


def test_handlers_run_in_the_emitting_thread() -> None:
    bus = EventBus()
    threads: list[int] = []
    bus.on(ev.Event, lambda e: threads.append(threading.get_ident()))
    emitter = threading.Thread(target=bus.emit, args=(ev.NodeReady(node=0),))
    emitter.start()
    emitter.join()
    assert threads == [emitter.ident]


def test_bus_delivers_every_event_from_concurrent_emitters() -> None:
    bus = EventBus()
    seen: list[ev.Event] = []
    lock = threading.Lock()

    def record(event: ev.Event) -> None:
        with lock:
            seen.append(event)

    bus.on(ev.Event, record)
    emitters = [
        threading.Thread(target=lambda n=n: [bus.emit(ev.NodeReady(node=n)) for _ in range(200)])
        for n in range(8)
    ]
    for t in emitters:
        t.start()
    for t in emitters:
        t.join()
    assert len(seen) == 1600


def test_handler_may_unsubscribe_itself_while_handling() -> None:
    bus = EventBus()
    seen: list[ev.Event] = []
    unsubscribe: list = []

    def once(event: ev.Event) -> None:
        seen.append(event)
        unsubscribe[0]()

    unsubscribe.append(bus.on(ev.Event, once))
    bus.emit(ev.NodeReady(node=0))
    bus.emit(ev.NodeReady(node=1))
    assert len(seen) == 1


def test_bus_masks_added_secrets_before_handlers_see_them() -> None:
    bus = EventBus()
    bus.add_secret("sk-live-1234")
    seen: list[ev.Log] = []
    bus.on(ev.Log, seen.append)
    bus.emit(ev.Log(node=0, line="using sk-live-1234"))
    assert seen[0].line == "using ***"
