"""A pid file names a process by its pid and start time: a kill through it never reaches another
program that took the number since (`skyward.transport.ssh_commands.record_pid`, `kill_command`).

The shell lines run here with this machine's /bin/sh, as they run on a host over SSH."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyward.transport.ssh_commands import kill_command, record_pid


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A process group whose leader recorded itself in a pid file, as a worker does."""
    pid_file = tmp_path / "worker-1.pid"
    process = subprocess.Popen(
        ["/bin/sh", "-c", f"{record_pid(str(pid_file))} && exec sleep 60"], start_new_session=True
    )
    deadline = time.monotonic() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    yield process, pid_file
    process.kill()
    process.wait()


def test_a_pid_file_records_the_pid_and_when_it_started(
    recorded: tuple[subprocess.Popen[bytes], Path],
) -> None:
    process, pid_file = recorded
    pid, start = pid_file.read_text().split()
    ticks = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    assert (int(pid), start) == (process.pid, ticks)


def test_the_kill_ends_the_process_the_file_records(recorded: tuple[subprocess.Popen[bytes], Path]) -> None:
    process, pid_file = recorded
    subprocess.run(["/bin/sh", "-c", kill_command(str(pid_file))], check=True)
    assert process.wait(10) == -9
    assert not pid_file.exists()


Recorded = tuple[subprocess.Popen[bytes], Path]


def test_a_process_that_reused_the_number_is_left_alone(recorded: Recorded) -> None:
    # The file says the pid started at another time: the process there now is another program.
    process, pid_file = recorded
    pid, _ = pid_file.read_text().split()
    pid_file.write_text(f"{pid} 1\n")
    subprocess.run(["/bin/sh", "-c", kill_command(str(pid_file))], check=True)
    time.sleep(0.2)
    assert process.poll() is None
    assert not pid_file.exists()  # the stale record goes all the same


def test_an_old_style_file_with_the_pid_alone_still_kills(recorded: Recorded) -> None:
    process, pid_file = recorded
    pid_file.write_text(f"{process.pid}\n")
    subprocess.run(["/bin/sh", "-c", kill_command(str(pid_file))], check=True)
    assert process.wait(10) == -9
