"""`LoopThread.run_here`: a loop callback run on the caller's thread while the loop waits its turn."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from skyward import fastpaths
from skyward.client.loop import LoopThread


@pytest.fixture(autouse=True)
def fast_paths_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are the asyncio-drive fast path's own tests: they run it whatever the switch says."""
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)


@pytest.fixture
def loop_thread():
    thread = LoopThread("test-loop")
    yield thread
    thread.stop()


def test_the_callback_runs_on_the_callers_thread_with_the_loop_running(loop_thread: LoopThread) -> None:
    seen = []
    ran = loop_thread.run_here(lambda: seen.append((threading.get_ident(), asyncio.get_running_loop())))
    assert ran
    assert seen == [(threading.get_ident(), loop_thread.loop)]
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # only while the callback ran


def test_a_callback_it_schedules_runs_on_the_loop_soon(loop_thread: LoopThread) -> None:
    done = threading.Event()
    on = []

    def schedule() -> None:
        asyncio.get_running_loop().call_soon(lambda: (on.append(threading.get_ident()), done.set()))

    assert loop_thread.run_here(schedule)
    assert done.wait(5), "the loop was not woken for the callback"
    assert on != [threading.get_ident()]


def test_a_timer_it_arms_fires_though_the_loop_slept_without_one(loop_thread: LoopThread) -> None:
    fired = threading.Event()
    assert loop_thread.run_here(lambda: asyncio.get_running_loop().call_later(0.05, fired.set))
    assert fired.wait(5), "the loop was not woken for its nearer timer"


def test_callbacks_queued_before_it_run_first(loop_thread: LoopThread) -> None:
    order: list[str] = []

    def second() -> None:
        if not loop_thread.run_here(order.append, "run here"):
            loop_thread.call(order.append, "run here")  # what the dispatcher does when it may not

    other = threading.Thread(target=second)

    def first() -> None:
        asyncio.get_running_loop().call_soon(order.append, "queued first")
        other.start()  # it waits for the turn, which this thread holds, then finds the queue
        time.sleep(0.1)

    assert loop_thread.run_here(first)
    other.join(5)
    deadline = time.monotonic() + 5
    while len(order) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == ["queued first", "run here"]


def test_on_the_loop_thread_it_declines(loop_thread: LoopThread) -> None:
    answer = []
    done = threading.Event()

    def on_loop() -> None:
        answer.append(loop_thread.run_here(answer.append, "ran"))
        done.set()

    loop_thread.call(on_loop)
    assert done.wait(5)
    assert answer == [False]


def test_an_error_reaches_the_caller_and_the_loop_goes_on(loop_thread: LoopThread) -> None:
    def fail() -> None:
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        loop_thread.run_here(fail)

    async def answer() -> int:
        return 42

    assert loop_thread.run(answer(), timeout=5) == 42


def test_a_stopped_loop_runs_nothing_here() -> None:
    thread = LoopThread("test-loop")
    thread.stop()
    ran = []
    assert not thread.run_here(ran.append, 1)
    assert ran == []


def test_inside_it_this_thread_counts_as_the_loops_and_may_not_nest(loop_thread: LoopThread) -> None:
    seen = []

    def outer() -> None:
        seen.append(loop_thread.is_current())
        seen.append(loop_thread.run_here(seen.append, "nested"))  # the turn is this thread's already

    assert loop_thread.run_here(outer)
    assert seen == [True, False]
    assert not loop_thread.is_current()
