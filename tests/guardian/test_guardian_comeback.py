"""A client that comes back to a node its guardian still guards: a restarted pool server adopting
its pool, the next pool on a lingering machine. Its start claims the lease; a start that comes as
the lease lapses either keeps it, or waits for the guardian's end and guards the folder itself,
never answering "running" for a guardian about to end the new client's work and exit."""

from __future__ import annotations

import os
import time
from pathlib import Path

from guardian_support import Node, wait_until

from skyward.guardian import agent

SLACK = 10.0
IGNORES_SIGTERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"


def test_a_start_that_finds_the_guardian_claims_its_lease_past_the_initial_one(node: Node) -> None:
    worker = node.start_worker()
    first = node.start_guardian(ttl=0.5, initial=1)
    second = node.start_guardian(ttl=0.5, initial=1)
    assert second == "running " + first.split()[1]

    time.sleep(2.5)  # well past the initial lease and the ttl: the claim holds the lease
    assert worker.poll() is None, node.log()
    assert not node.ended.exists()


def test_a_start_while_the_guardian_ends_the_lease_waits_for_the_end_then_guards_the_folder(
    node: Node,
) -> None:
    old_worker = node.start_worker(IGNORES_SIGTERM)  # the end waits its grace for this one
    first = node.start_guardian(ttl=0.3, initial=0.3, grace=2)
    ending = node.folder / agent.ENDING
    assert wait_until(lambda: "the lease lapsed" in node.log(), SLACK), node.log()
    assert ending.exists()

    began = time.monotonic()
    second = node.start_guardian(ttl=60)
    waited = time.monotonic() - began

    old_pid, (word, new_pid) = int(first.split()[1]), second.split()
    assert word == "started" and int(new_pid) != old_pid, second
    assert waited >= 1.0  # the old guardian's grace for the worker that ignores SIGTERM
    assert not agent.alive(old_pid)  # it had ended everything and gone before the answer
    assert old_worker.poll() is not None and node.ended.exists()
    assert (node.folder / agent.LOCK).read_text().split() == [new_pid]
    assert agent.alive(int(new_pid)) and not ending.exists()


def guardian_in(folder: Path, initial: float) -> agent.Guardian:
    folder.mkdir(parents=True, exist_ok=True)
    return agent.Guardian(str(folder), ttl=1, initial=initial, grace=1, end_command="")


def test_a_lapsed_lease_with_no_client_back_is_marked_ending(tmp_path: Path) -> None:
    guardian = guardian_in(tmp_path / "node", initial=0)
    time.sleep(0.01)

    assert guardian.confirm_end()
    assert (tmp_path / "node" / agent.ENDING).exists()


def test_a_claim_that_lands_as_the_lease_lapses_keeps_it(tmp_path: Path) -> None:
    """The guardian's side of the handshake: the start claimed before it saw no `ENDING` mark,
    so the guardian, looking once more after writing the mark, must see the claim."""
    folder = tmp_path / "node"
    guardian = guardian_in(folder, initial=0)
    time.sleep(0.01)
    assert guardian.lease.lapsed(time.monotonic(), 0)
    (folder / agent.CLAIM).touch()

    assert not guardian.confirm_end()
    assert not (folder / agent.ENDING).exists()
    assert "came back" in (folder / agent.LOG).read_text()


def test_a_claim_holds_the_lease_for_a_while_and_then_the_usual_rules_apply() -> None:
    lease = agent.Lease(ttl=0, initial=1, started=0)
    lease.claim(5)
    assert not lease.lapsed(5 + agent.CLAIM_HOLD, open_renewers=0)
    assert lease.lapsed(5 + agent.CLAIM_HOLD + 0.1, open_renewers=0)  # ttl=0, no renewer open


def test_the_start_sees_the_mark_of_a_guardian_it_did_not_reach_in_time(tmp_path: Path) -> None:
    """The start's side: the mark is there, so it waits until the ending guardian has gone, and
    takes the lock once it is free."""
    folder = tmp_path / "node"
    folder.mkdir()
    held = agent._lock(str(folder))  # the ending guardian's lock
    assert held is not None
    (folder / agent.ENDING).touch()

    def finish_ending() -> None:
        time.sleep(0.5)
        os.unlink(folder / agent.LOCK)  # as `Guardian.run` does: the lock first, then the mark
        os.close(held)
        os.unlink(folder / agent.ENDING)

    import threading

    threading.Thread(target=finish_ending, daemon=True).start()
    began = time.monotonic()
    taken = agent._outlast_ending(str(folder))
    assert taken is not None and time.monotonic() - began >= 0.5
    assert (folder / agent.CLAIM).exists()
    os.close(taken)


def test_a_mark_left_by_a_guardian_killed_while_ending_holds_no_later_start_up(node: Node) -> None:
    (node.folder / agent.ENDING).touch()  # its guardian was killed outright as it ended
    first = node.start_guardian(ttl=60)
    began = time.monotonic()
    second = node.start_guardian(ttl=60)

    assert first.startswith("started ") and second == "running " + first.split()[1]
    assert time.monotonic() - began < 5


def test_the_uploaded_guardian_is_one_file_that_runs_without_skyward(tmp_path: Path) -> None:
    """`agent.py` and `processes.py` are two modules here and one file on the node."""
    import subprocess
    import sys

    from skyward.guardian import source

    program = tmp_path / "guardian.py"
    program.write_bytes(source())
    assert "skyward" not in "".join(
        line for line in program.read_text().splitlines() if line.startswith(("import ", "from "))
    )
    done = subprocess.run(  # -I: no PYTHONPATH, no site-packages, no current folder on the path
        [sys.executable, "-S", "-I", str(program), "--help"], capture_output=True, cwd=tmp_path, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert b"start" in done.stdout
