"""The worker's task threads: the reader runs one-slot tasks itself and hands reading on when one
runs long (skyward/worker/threads.py). Frames come from a queue standing in for the channel."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import pytest
from core_support import local_pool

import skyward as sky
from skyward.wire import Frame, Kind
from skyward.worker.threads import STOP, Job, TaskThreads

pytestmark = pytest.mark.timeout(30)


class Channel:
    """Frames fed by the test; None ends the stream like a closed channel."""

    def __init__(self) -> None:
        self.incoming: queue.SimpleQueue[Frame | None] = queue.SimpleQueue()

    def frames(self) -> Iterator[Frame]:
        while (frame := self.incoming.get()) is not None:
            yield frame

    def send(self, kind: Kind, id: int = 0, payload: object = None) -> None:
        self.incoming.put(Frame(kind, id, payload))


def serve(count: int, handle) -> tuple[Channel, TaskThreads]:
    channel = Channel()
    threads = TaskThreads(count, channel.frames(), handle).start()
    return channel, threads


def test_a_one_slot_task_runs_on_the_thread_that_read_it() -> None:
    ran_on: list[int] = []
    read_on: list[int] = []

    def handle(frame: Frame):
        read_on.append(threading.get_ident())
        return Job(lambda: ran_on.append(threading.get_ident()))

    channel, threads = serve(1, handle)
    channel.send(Kind.TASK, 1)
    channel.incoming.put(None)
    threads.wait()
    assert ran_on == read_on


def test_a_long_task_hands_reading_to_another_thread() -> None:
    release = threading.Event()
    seen_while_running: list[int] = []

    def handle(frame: Frame):
        if frame.kind is Kind.TASK:
            return Job(release.wait)
        seen_while_running.append(frame.id)  # a ping, read while the task still runs
        release.set()
        return None

    channel, threads = serve(1, handle)
    channel.send(Kind.TASK, 1)
    channel.send(Kind.PING, 7)
    assert release.wait(timeout=10), "nobody read the ping while the task ran"
    assert seen_while_running == [7]
    channel.incoming.put(None)
    threads.wait()


def test_tasks_beyond_the_slots_wait_for_a_free_one() -> None:
    running = 0
    most = 0
    lock = threading.Lock()
    done = threading.Semaphore(0)

    def task() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        threading.Event().wait(0.05)
        with lock:
            running -= 1
        done.release()

    channel, threads = serve(2, lambda frame: Job(task))
    for i in range(6):
        channel.send(Kind.TASK, i)
    for _ in range(6):
        assert done.acquire(timeout=10)
    assert most == 2
    channel.incoming.put(None)
    threads.wait()


def test_control_frames_are_handled_in_arrival_order() -> None:
    order: list[int] = []

    def handle(frame: Frame):
        order.append(frame.id)
        return Job(lambda: None) if frame.kind is Kind.TASK else None

    channel, threads = serve(1, handle)
    for i in range(50):
        channel.send(Kind.TASK if i % 3 == 0 else Kind.CREDIT, i)
    channel.incoming.put(None)
    threads.wait()
    assert order == list(range(50))


def test_stop_from_the_handler_ends_the_serving() -> None:
    channel, threads = serve(1, lambda frame: STOP)
    channel.send(Kind.SHUTDOWN)
    assert threads.finished.wait(timeout=10)


@sky.function
def answer(value: int) -> int:
    return value


@sky.function
def sleep_then(value: int, seconds: float) -> int:
    import time

    time.sleep(seconds)
    return value


def test_a_short_result_is_not_held_behind_a_long_task_on_the_same_worker() -> None:
    with local_pool(nodes=1, options=sky.Options(worker=sky.Worker(concurrency=1, buffer=1))) as pool:
        quick = answer(1) > pool
        slow = sleep_then(2, 20.0) > pool  # queued on the worker behind `quick`
        assert quick.result(timeout=10) == 1
        assert not slow.done()


@sky.function
def double(value: int) -> int:
    return 2 * value


def test_lone_calls_and_maps_from_two_threads_all_get_their_answers() -> None:
    """Lone `>>` calls are written from the caller's thread while the loop places a map's tasks:
    both paths share the nodes' slots and pipes, and every answer reaches its caller."""
    errors: list[BaseException] = []
    with local_pool(nodes=2) as pool:

        def lone_calls() -> None:
            try:
                for i in range(300):
                    assert (double(i) >> pool) == 2 * i
                    assert (double(i) > pool).result(timeout=30) == 2 * i
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        thread = threading.Thread(target=lone_calls)
        thread.start()
        for _ in range(5):
            assert pool.map(double.fn, range(200)) == [2 * i for i in range(200)]
        thread.join(timeout=60)
        assert not thread.is_alive()
    assert errors == []


def test_every_lone_call_reports_started_before_completed() -> None:
    events: list[tuple[str, int]] = []
    lock = threading.Lock()

    def record(kind: str):
        def handler(event) -> None:
            with lock:
                events.append((kind, event.task_id))

        return handler

    with local_pool(nodes=2) as pool:
        pool.on(sky.TaskStarted, record("started"))
        pool.on(sky.TaskCompleted, record("completed"))
        for i in range(200):
            assert (double(i) >> pool) == 2 * i
    ids = {task_id for _, task_id in events}
    assert len(ids) == 200
    for task_id in ids:
        assert [kind for kind, i in events if i == task_id] == ["started", "completed"]


@pytest.mark.timeout(120)
def test_many_slots_finishing_together_answer_every_task() -> None:
    """Task threads that finish at once all check for output before they answer; none may fail
    that check because another thread is checking too (each answer must arrive)."""
    with local_pool(nodes=1, worker=sky.Worker(concurrency=4)) as pool:
        for _ in range(5):
            assert pool.map(double, range(400)) == [2 * i for i in range(400)]
