"""`sky logs`: the client log's last lines, and the lines written after them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from cli_support import Sky, no_traceback, write


def log_file(sky: Sky, lines: int) -> Path:
    return write(sky.home / "logs" / "skyward.log", "".join(f"event {i}\n" for i in range(1, lines + 1)))


def test_logs_prints_the_last_lines_of_the_client_log(sky: Sky) -> None:
    log_file(sky, 50)
    done = sky("logs", "--lines", "3", "--no-follow")
    assert (done.returncode, done.stdout) == (0, "event 48\nevent 49\nevent 50\n")


def test_logs_does_not_follow_when_stdout_is_not_a_terminal(sky: Sky) -> None:
    log_file(sky, 5)
    done = sky("logs", "-n", "2", timeout=20)
    assert (done.returncode, done.stdout) == (0, "event 4\nevent 5\n")


def test_logs_reads_another_file_when_asked(sky: Sky) -> None:
    other = write(sky.root / "run.log", "mine\n")
    assert sky("logs", "--file", str(other)).stdout == "mine\n"


def test_no_log_yet_is_exit_code_1_naming_the_path(sky: Sky) -> None:
    done = sky("logs")
    assert done.returncode == 1 and no_traceback(done)
    assert str(sky.home / "logs" / "skyward.log") in done.stderr


def test_follow_prints_lines_appended_after_it_started(sky: Sky) -> None:
    path = log_file(sky, 3)
    command = [sys.executable, "-m", "skyward.cli", "logs", "-n", "1", "--follow"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=sky.env, cwd=sky.root) as follower:
        try:
            assert follower.stdout is not None
            assert follower.stdout.readline() == "event 3\n"
            time.sleep(0.2)
            with open(path, "a") as log:
                log.write("event 4\n")
            assert follower.stdout.readline() == "event 4\n"
        finally:
            follower.kill()


def test_follow_goes_on_in_the_new_file_after_a_rotation(sky: Sky) -> None:
    path = log_file(sky, 2)
    command = [sys.executable, "-m", "skyward.cli", "logs", "-n", "1", "--follow"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=sky.env, cwd=sky.root) as follower:
        try:
            assert follower.stdout is not None
            assert follower.stdout.readline() == "event 2\n"
            path.rename(path.with_suffix(".log.1"))  # what the rotating handler does
            path.write_text("after rotation, a line longer than the old file\n")
            assert follower.stdout.readline() == "after rotation, a line longer than the old file\n"
        finally:
            follower.kill()
