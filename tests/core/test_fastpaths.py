"""Fast paths (`skyward.fastpaths`): each is used where the internals it needs are there, and takes
its public fallback where they are missing or `SKYWARD_FAST_PATHS=off`."""

from __future__ import annotations

import asyncio
import importlib
import threading
import types
from collections.abc import Iterator
from typing import Any

import pytest

from skyward import fastpaths
from skyward.client.loop import LoopThread
from skyward.errors import ConfigurationError
from skyward.fastpaths import asyncio_drive, asyncssh_send
from skyward.fastpaths.registry import FAST_PATHS


@pytest.fixture
def fast_paths_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)


@pytest.fixture
def fast_paths_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fastpaths.SWITCH, "off")


# -- the switch and the list ---------------------------------------------------------------------------


def test_fast_paths_are_on_unless_the_switch_says_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fastpaths.SWITCH, raising=False)
    assert fastpaths.enabled(asyncio_drive.NAME)
    monkeypatch.setenv(fastpaths.SWITCH, "OFF")
    assert not fastpaths.enabled(asyncio_drive.NAME)
    monkeypatch.setenv(fastpaths.SWITCH, "on")
    assert fastpaths.enabled(asyncio_drive.NAME)


def test_the_switch_may_turn_off_named_fast_paths_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fastpaths.SWITCH, f"off:{asyncssh_send.NAME}")
    assert not fastpaths.enabled(asyncssh_send.NAME)
    assert fastpaths.enabled(asyncio_drive.NAME)


def test_a_switch_value_neither_on_nor_off_is_refused_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fastpaths.SWITCH, "fast")
    with pytest.raises(ConfigurationError, match="SKYWARD_FAST_PATHS=off"):
        fastpaths.enabled(asyncio_drive.NAME)


def test_a_switch_naming_no_fast_path_is_refused_with_the_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fastpaths.SWITCH, "off:asyncio-driv")
    with pytest.raises(ConfigurationError, match=f"asyncio-driv; they are: .*{asyncio_drive.NAME}"):
        fastpaths.enabled(asyncio_drive.NAME)


def test_every_listed_fast_path_names_the_module_that_detects_it() -> None:
    assert len({path.name for path in FAST_PATHS}) == len(FAST_PATHS)
    for path in FAST_PATHS:
        try:
            module = importlib.import_module(path.module)
        except ImportError:
            assert path.module.startswith("skyward_torch"), f"{path.module} is missing"  # a plugin's own
            continue
        assert path.name == module.NAME and callable(module.detect)
        assert path.internals and path.saves and path.detection and path.fallback


# -- asyncio-drive -----------------------------------------------------------------------------------------


def test_a_selector_loop_has_what_a_caller_needs_to_drive_it(fast_paths_on: None) -> None:
    loop = asyncio.SelectorEventLoop()
    try:
        internals = asyncio_drive.detect(loop)
        assert internals is not None
        assert not internals.ready() and internals.timers() == [] and not internals.stopping()
        assert internals.self_pipe() is not None
    finally:
        loop.close()


def test_a_loop_without_run_once_is_never_driven(fast_paths_on: None) -> None:
    stand_in = types.SimpleNamespace(_ready=[], _scheduled=[], _stopping=False)  # no _run_once
    assert asyncio_drive.detect(stand_in) is None


def test_with_fast_paths_off_a_selector_loop_is_never_driven(fast_paths_off: None) -> None:
    loop = asyncio.SelectorEventLoop()
    try:
        assert asyncio_drive.detect(loop) is None
    finally:
        loop.close()


@pytest.fixture
def public_loop_thread(fast_paths_off: None) -> Iterator[LoopThread]:
    thread = LoopThread("test-public-loop")
    yield thread
    thread.stop()


def test_without_the_fast_path_no_callback_runs_on_the_callers_thread(public_loop_thread: LoopThread) -> None:
    ran: list[int] = []
    assert not public_loop_thread.run_here(ran.append, 1)
    assert public_loop_thread.send_and_drive(ran.append, (2,), lambda: True) is None
    assert not public_loop_thread.drive(lambda: False)
    assert ran == []


def test_without_the_fast_path_a_waiting_caller_gets_its_answer_from_the_loop_thread(
    public_loop_thread: LoopThread,
) -> None:
    answered = threading.Event()
    readers: list[threading.Thread] = []

    def answer() -> None:
        readers.append(threading.current_thread())
        answered.set()

    public_loop_thread.call(answer)
    assert public_loop_thread.wait_for(answered.is_set, lambda: answered.wait(30))
    assert readers == [public_loop_thread._thread]


# -- asyncssh-unpadded -------------------------------------------------------------------------------------


class StandInConnection:
    """A connection with a negotiated AES-GCM cipher whose send_packet takes no handler."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    def get_extra_info(self, name: str) -> str | None:
        return "aes128-gcm@openssh.com" if name == "send_cipher" else None

    def send_packet(self, pkttype: int, payload: bytes) -> None:
        self.sent.append((pkttype, payload))


def test_asyncssh_send_packet_takes_what_the_wrapper_passes_it() -> None:
    import asyncssh

    assert asyncssh_send.send_packet_fits(asyncssh.SSHClientConnection)


def test_a_send_packet_of_another_shape_is_left_alone(fast_paths_on: None) -> None:
    conn = StandInConnection()
    assert not asyncssh_send.send_packet_fits(StandInConnection)
    assert not asyncssh_send.without_ignore_padding(conn)
    assert "send_packet" not in vars(conn)
