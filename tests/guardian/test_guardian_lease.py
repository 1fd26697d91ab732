"""The node guardian (`skyward.guardian`), run as on a node: its own file, started detached by the
client's shell line, renewed by `renew` processes. Real processes throughout; the machine's end
command is a harmless one that records which secrets were still on disk when it ran."""

from __future__ import annotations

import os
import time

from guardian_support import Node, wait_until

#: Waits that a lease lapse must meet on a slow, shared machine (the guardian looks every 0.25 s).
SLACK = 10.0
#: Set by the stand-in worker's SIGTERM handler, as the worker leaves its plugins' contexts.
ON_SIGTERM = """
import signal, sys, time
def leave(*_):
    open({marker!r}, "w").write("around_app exited")
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
time.sleep(600)
"""


def test_a_lapsed_lease_stops_the_pool_then_removes_its_secrets_then_ends_the_machine(node: Node) -> None:
    marker = node.root / "exits-ran"
    worker = node.start_worker(ON_SIGTERM.format(marker=str(marker)))
    node.start_guardian(ttl=1)
    renewer = node.renew()
    time.sleep(1.5)
    assert worker.poll() is None
    renewer.fall_silent()

    assert wait_until(node.ended.exists, SLACK), node.log()
    assert worker.poll() is not None
    assert marker.read_text() == "around_app exited"
    assert node.secrets == []
    assert node.ended.read_text() == ""  # the end command ran after the secrets were gone
    assert (node.folder / "venv" / "reusable").read_text() == "kept"
    assert wait_until(lambda: not node.guardian_running(), SLACK)


def test_renewals_keep_the_lease_for_as_long_as_they_come(node: Node) -> None:
    worker = node.start_worker()
    node.start_guardian(ttl=1)
    renewer = node.renew()
    time.sleep(4)
    assert worker.poll() is None
    assert not node.ended.exists()
    assert len(node.secrets) == 2

    renewer.fall_silent()
    assert wait_until(node.ended.exists, SLACK), node.log()


def test_with_ttl_zero_the_lease_ends_as_soon_as_the_renew_channel_closes(node: Node) -> None:
    worker = node.start_worker()
    node.start_guardian(ttl=0)
    renewer = node.renew()
    time.sleep(1)
    assert worker.poll() is None
    closed = time.monotonic()
    renewer.close()

    assert wait_until(node.ended.exists, SLACK), node.log()
    assert time.monotonic() - closed < 5  # not the 15 s an open but silent channel would get
    assert worker.poll() is not None
    assert node.secrets == []


def test_a_task_holding_the_gil_in_c_code_does_not_end_a_renewed_lease(node: Node) -> None:
    # Catastrophic backtracking: minutes inside one call of the C regex engine, the GIL held.
    worker = node.start_worker("import re; re.match(r'(a+)+$', 'a' * 32 + 'b')")
    node.start_guardian(ttl=1)
    renewer = node.renew()
    time.sleep(3.5)  # 3 x ttl, and more
    assert worker.poll() is None
    assert not node.ended.exists()

    renewer.close()
    assert wait_until(node.ended.exists, SLACK), node.log()
    assert worker.poll() is not None


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(node: Node) -> None:
    worker = node.start_worker(
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    )
    node.start_guardian(ttl=0, grace=1)
    node.renew().close()

    assert wait_until(node.ended.exists, SLACK), node.log()
    assert worker.poll() is not None
    assert "killed" in node.log()


def test_a_client_that_never_renews_gets_the_initial_lease_then_the_machine_ends(node: Node) -> None:
    worker = node.start_worker()
    started = time.monotonic()
    node.start_guardian(ttl=1, initial=3)  # bootstrap_timeout + ttl
    time.sleep(1.5)
    assert worker.poll() is None  # past ttl, within the initial lease

    assert wait_until(node.ended.exists, SLACK), node.log()
    assert time.monotonic() - started >= 3
    assert worker.poll() is not None
    assert node.secrets == []


def test_a_second_start_finds_the_guardian_already_there(node: Node) -> None:
    first = node.start_guardian(ttl=1)
    second = node.start_guardian(ttl=1)
    assert first.startswith("started ")
    assert second == "running " + first.split()[1]


def test_a_released_lease_ends_nothing(node: Node) -> None:
    worker = node.start_worker()
    node.start_guardian(ttl=0)
    renewer = node.renew()
    node.release()
    renewer.close()

    assert wait_until(lambda: not node.guardian_running(), SLACK), node.log()
    time.sleep(0.5)
    assert worker.poll() is None
    assert len(node.secrets) == 2
    assert not node.ended.exists()


def test_a_removed_node_folder_stops_the_guardian_without_ending_the_machine(node: Node) -> None:
    import shutil

    node.start_guardian(ttl=0)
    renewer = node.renew()
    shutil.rmtree(node.folder)
    renewer.close()

    assert wait_until(lambda: not node.guardian_running(), SLACK)
    assert not node.ended.exists()


def test_a_pid_file_whose_number_another_process_took_since_is_left_alone(node: Node) -> None:
    stranger = node.start_worker(name="worker-2")  # a process that took the number of a dead worker
    old = time.time() - 3600
    os.utime(node.folder / "worker-2.pid", (old, old))
    node.start_guardian(ttl=0)
    node.renew().close()

    assert wait_until(node.ended.exists, SLACK), node.log()
    assert stranger.poll() is None
