"""How a worker sends its outcomes: a burst of tasks the client wrote at once is answered in one
write, and nothing it holds back is lost (skyward/worker/main.py, `Worker.deliver`).

The worker is started directly and spoken to frame by frame; its write system calls are counted
from `/proc/<pid>/io`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from core_support import DirectWorker

from skyward.messages import Hello, TaskMessage, function_key, pickle_function
from skyward.task.instance import InstanceInfo
from skyward.wire import Frame, Kind, encode_bytes

pytestmark = pytest.mark.timeout(60)


def echo(value: Any) -> Any:
    return value


@pytest.fixture
def worker() -> Any:
    info = InstanceInfo(node=0, total_nodes=1)
    started = DirectWorker(Hello(info=info, concurrency=1, executor="thread", reuse_processes=True, env={}))
    yield started
    started.close()


def writes(worker: DirectWorker) -> int:
    fields = dict(line.split(": ") for line in Path(f"/proc/{worker.proc.pid}/io").read_text().splitlines())
    return int(fields["syscw"])


def send_at_once(worker: DirectWorker, frames: list[tuple[Kind, int, Any]]) -> None:
    """Every frame in one write, as a client's burst arrives."""
    assert worker.proc.stdin is not None
    worker.proc.stdin.write(b"".join(encode_bytes(kind, id, payload) for kind, id, payload in frames))
    worker.proc.stdin.flush()


def ship(worker: DirectWorker) -> bytes:
    data = pickle_function(echo, "echo")
    key = function_key(data)
    worker.send(Kind.FUNCTION, 0, (key, data))
    return key


def task(key: bytes, value: Any) -> Any:
    return TaskMessage(key, (value,), {}, "echo").to_wire()


def answers(worker: DirectWorker, count: int) -> list[Frame]:
    return [worker.next_frame() for _ in range(count)]


def test_a_burst_of_tasks_is_answered_in_one_write(worker: DirectWorker) -> None:
    key = ship(worker)
    worker.send(Kind.TASK, 1, task(key, 0))
    assert worker.next_frame().payload == 0  # the function is loaded: nothing else to write
    before = writes(worker)

    send_at_once(worker, [(Kind.TASK, 10 + i, task(key, i)) for i in range(20)])
    frames = answers(worker, 20)

    assert [(f.kind, f.id, f.payload) for f in frames] == [(Kind.RESULT, 10 + i, i) for i in range(20)]
    assert writes(worker) - before == 1


def test_lone_tasks_are_each_answered_before_the_next_is_sent(worker: DirectWorker) -> None:
    key = ship(worker)
    for i in range(50):
        worker.send(Kind.TASK, 100 + i, task(key, i))
        frame = worker.next_frame()
        assert (frame.kind, frame.id, frame.payload) == (Kind.RESULT, 100 + i, i)


def test_outcomes_held_behind_a_control_frame_leave_once_the_reader_runs_dry(worker: DirectWorker) -> None:
    key = ship(worker)
    burst = [(Kind.TASK, 1, task(key, "a")), (Kind.TASK, 2, task(key, "b")), (Kind.PING, 7, None)]
    send_at_once(worker, burst)
    frames = answers(worker, 3)

    assert sorted((f.kind.name, f.id) for f in frames) == [("PONG", 7), ("RESULT", 1), ("RESULT", 2)]
    results = [f.payload for f in frames if f.kind is Kind.RESULT]
    assert results == ["a", "b"]
