"""`LoopThread.drive`: a caller waiting for a lone answer runs the loop itself, and the loop
thread leaves it the sockets meanwhile (and for `PARK` after)."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from skyward import fastpaths
from skyward.client import interrupts
from skyward.client import loop as loop_module
from skyward.client.loop import LoopThread


@pytest.fixture(autouse=True)
def fast_paths_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These are the asyncio-drive fast path's own tests: they run it whatever the switch says."""
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    thread = LoopThread("test-loop")
    yield thread
    thread.stop()


class Answers:
    """A socket pair whose reading end the loop watches: each byte written is an "answer"; the
    reader records the thread that read it."""

    def __init__(self, loop_thread: LoopThread, on_read=None) -> None:
        self.ours, self.theirs = socket.socketpair()
        self.ours.setblocking(False)
        self.readers: list[int] = []
        self.on_read = on_read
        self.got = threading.Event()
        loop = loop_thread.loop

        async def watch() -> None:
            loop.add_reader(self.ours.fileno(), self._read)

        loop_thread.run(watch())

    def _read(self) -> None:
        data = self.ours.recv(64)
        self.readers.extend(threading.get_ident() for _ in data)
        if self.on_read is not None:
            self.on_read()
        self.got.set()

    def answer_later(self, delay: float) -> threading.Thread:
        def send() -> None:
            time.sleep(delay)
            self.theirs.send(b"x")

        sender = threading.Thread(target=send)
        sender.start()
        return sender

    def close(self) -> None:
        self.ours.close()
        self.theirs.close()


def test_the_caller_reads_its_answer_on_its_own_thread(loop_thread: LoopThread) -> None:
    answers = Answers(loop_thread)
    sender = answers.answer_later(0.05)
    assert loop_thread.drive(answers.got.is_set)
    sender.join()
    assert answers.readers == [threading.get_ident()]
    answers.close()


def test_a_handler_run_while_driving_counts_as_the_loops(loop_thread: LoopThread) -> None:
    current: list[bool] = []
    answers = Answers(loop_thread, on_read=lambda: current.append(loop_thread.is_current()))
    answers.answer_later(0.05).join()
    assert loop_thread.drive(answers.got.is_set)
    assert current == [True]  # a handler that dispatches and waits is refused, as on the loop thread
    assert not loop_thread.is_current()
    answers.close()


def test_after_a_park_the_loop_thread_reads_the_sockets_again(loop_thread: LoopThread) -> None:
    answers = Answers(loop_thread)
    answers.answer_later(0.0)
    assert loop_thread.drive(answers.got.is_set)
    answers.got.clear()
    answers.answer_later(loop_module.PARK * 5).join()  # nobody drives now
    assert answers.got.wait(5), "an answer after the park was never read"
    assert answers.readers[-1] != threading.get_ident()
    answers.close()


def test_a_callback_from_another_thread_ends_a_park_at_once(
    loop_thread: LoopThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop_module, "PARK", 60.0)
    answers = Answers(loop_thread)
    answers.answer_later(0.0)
    assert loop_thread.drive(answers.got.is_set)
    ran = threading.Event()
    time.sleep(0.05)  # the loop thread is parked now, for a minute
    began = time.monotonic()
    loop_thread.call(ran.set)
    assert ran.wait(30)
    assert time.monotonic() - began < 30, "the park ignored the self-pipe"
    answers.close()


def test_a_timer_fires_during_a_park(loop_thread: LoopThread, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "PARK", 60.0)
    fired = threading.Event()

    def arm_then_answer() -> None:
        asyncio.get_running_loop().call_later(0.2, fired.set)

    # The reader arms the timer before the answer is sent: an answer read before then would arm none.
    answers = Answers(loop_thread, on_read=arm_then_answer)
    answers.answer_later(0.05)
    assert loop_thread.drive(answers.got.is_set)
    assert fired.wait(30), "the parked loop thread slept through its timer"
    answers.close()


def test_a_caller_that_cannot_drive_is_answered_by_the_loop_thread(
    loop_thread: LoopThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop_module, "PARK", 60.0)
    first, second = Answers(loop_thread), Answers(loop_thread)
    driving = threading.Event()
    first.on_read = None
    outcome: list[bool] = []

    def drive_first() -> None:
        driving.set()
        outcome.append(loop_thread.drive(first.got.is_set))

    driver = threading.Thread(target=drive_first)
    driver.start()
    driving.wait()
    time.sleep(0.05)
    assert not loop_thread.drive(second.got.is_set)  # one caller drives at a time
    waited = []

    def wait_second() -> None:
        waited.append(loop_thread.wait_for(second.got.is_set, lambda: second.got.wait(30)))

    waiter = threading.Thread(target=wait_second)
    waiter.start()
    first.answer_later(0.05).join()
    driver.join(5)
    assert outcome == [True]
    began = time.monotonic()
    second.answer_later(0.1).join()  # after the driver stopped, with a minute's park ahead
    waiter.join(30)
    assert waited == [True]
    assert time.monotonic() - began < 30, "the loop thread parked while a caller waited on it"
    first.close()
    second.close()


def test_a_stopped_loop_is_not_driven(loop_thread: LoopThread) -> None:
    loop_thread.stop()
    assert not loop_thread.drive(lambda: False)


@pytest.mark.usefixtures("interruptible")
def test_ctrl_c_while_driving_is_raised_once_driving_stops(loop_thread: LoopThread) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    finished: list[str] = []

    def interrupted_mid_callback() -> None:
        signal.raise_signal(signal.SIGINT)
        finished.append("the rest of the callback")

    answers = Answers(loop_thread, on_read=interrupted_mid_callback)
    interrupts.install(signal.SIGINT)
    try:
        answers.answer_later(0.05)
        with pytest.raises(KeyboardInterrupt):
            loop_thread.drive(lambda: False)  # only the interrupt ends this drive
        assert finished == ["the rest of the callback"]
        assert loop_thread.run(asyncio.sleep(0, "still running")) == "still running"
    finally:
        interrupts.restore(signal.SIGINT)
        answers.close()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("interruptible")
def test_ctrl_c_outside_loop_work_is_raised_at_once() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    interrupts.install(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            time.sleep(1)  # the handler runs before this returns
    finally:
        interrupts.restore(signal.SIGINT)


def test_after_a_long_drive_the_loop_thread_watches_at_once(
    loop_thread: LoopThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop_module, "LONG_DRIVE", 0.05)
    monkeypatch.setattr(loop_module, "LONG_DRIVE_POLL", 60.0)
    answers = Answers(loop_thread)
    answers.answer_later(0.3)  # a long task's answer: the parked loop thread now looks once a minute
    assert loop_thread.drive(answers.got.is_set)
    answers.got.clear()
    began = time.monotonic()
    answers.answer_later(loop_module.PARK * 5).join()
    assert answers.got.wait(30)
    assert time.monotonic() - began < 30, "the loop thread slept on after the long drive ended"
    assert answers.readers[-1] != threading.get_ident()
    answers.close()


def test_a_reader_added_on_a_reused_descriptor_survives_the_loop_threads_stale_events(
    loop_thread: LoopThread,
) -> None:
    loop = loop_thread.loop
    old_ours, old_theirs = socket.socketpair()
    fd = old_ours.fileno()
    loop_thread.run(_add_reader(loop, fd, lambda: None))
    fired = threading.Event()
    pairs: list[tuple[socket.socket, socket.socket]] = []

    def replace_the_reader() -> None:
        old_theirs.send(b"x")  # the loop thread wakes for the old reader, and waits for the turn
        time.sleep(0.2)
        loop.remove_reader(fd)
        old_ours.close()
        new_ours, new_theirs = socket.socketpair()  # the lowest free descriptor: the old one's
        pairs.append((new_ours, new_theirs))
        assert new_ours.fileno() == fd
        loop.add_reader(fd, lambda: (new_ours.recv(64), fired.set()))

    assert loop_thread.run_here(replace_the_reader)
    pairs[0][1].send(b"y")
    assert fired.wait(5), "the new reader was removed by the old one's event"
    loop_thread.run(_remove_reader(loop, fd))
    for sock in (*pairs[0], old_theirs):
        sock.close()


async def _add_reader(loop: asyncio.AbstractEventLoop, fd: int, callback) -> None:
    loop.add_reader(fd, callback)


async def _remove_reader(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    loop.remove_reader(fd)


def test_send_and_drive_sends_then_reads_the_answer_on_the_callers_thread(loop_thread: LoopThread) -> None:
    """A lone `>>` over SSH: the task is sent and its answer read on the caller's thread, in one
    turn of the loop's work."""
    answers = Answers(loop_thread)
    sent: list[tuple[int, bool]] = []

    def send() -> None:
        sent.append((threading.get_ident(), loop_thread.is_current()))
        answers.theirs.send(b"x")  # the worker answers at once

    turns = loop_thread._turns_taken
    assert loop_thread.send_and_drive(send, (), answers.got.is_set) is True
    assert sent == [(threading.get_ident(), True)]
    assert answers.readers == [threading.get_ident()]
    assert loop_thread._turns_taken == turns + 1
    answers.close()


def test_send_and_drive_runs_nothing_while_another_caller_drives(loop_thread: LoopThread) -> None:
    answers = Answers(loop_thread)
    driving = threading.Thread(target=loop_thread.drive, args=(answers.got.is_set,))
    driving.start()
    while loop_thread._driver is None:
        time.sleep(0.001)
    sent: list[int] = []
    assert loop_thread.send_and_drive(sent.append, (1,), lambda: True) is None
    assert sent == []  # the caller queues its task for the loop instead
    answers.theirs.send(b"x")
    driving.join(5)
    answers.close()


def test_an_error_of_send_reaches_the_caller_and_nothing_is_driven(loop_thread: LoopThread) -> None:
    def send() -> None:
        raise ValueError("cannot place")

    with pytest.raises(ValueError, match="cannot place"):
        loop_thread.send_and_drive(send, (), lambda: False)  # would drive for ever
    assert loop_thread.run(asyncio.sleep(0, "alive"), 5) == "alive"
