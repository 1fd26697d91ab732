"""A node folder on this machine, a guardian started in it the way the client starts one (its
source piped into the shell line that `skyward.guardian.start_command` renders), a stand-in
worker in a process group of its own, and renewers that write to the guardian like a client."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from skyward.guardian import release_command, renew_command, source, start_command
from skyward.guardian.agent import alive

PYTHONS = (sys.executable,)


def wait_until(condition: Callable[[], bool], timeout: float, tick: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(tick)
    return condition()


class Renewer:
    """A client's renew channel: a `guardian.py renew` process fed a byte every `interval`."""

    def __init__(self, folder: Path, interval: float = 0.2) -> None:
        before = set(folder.glob("renew-*.live"))
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", renew_command(str(folder), PYTHONS)], stdin=subprocess.PIPE
        )
        # Renewing once it says so (its `renew-<pid>.live`), as a client's renewer does long before
        # anything ends its pool: one still starting when a test removes the folder made it again.
        if not wait_until(lambda: bool(set(folder.glob("renew-*.live")) - before), 60):
            self.proc.kill()
            raise RuntimeError(f"the renewer of {folder} did not start within 60 s")
        self.interval = interval
        self._writing = threading.Event()
        self._writing.set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self._writing.is_set():
                with contextlib.suppress(OSError, ValueError):
                    assert self.proc.stdin is not None
                    self.proc.stdin.write(b".")
                    self.proc.stdin.flush()

    def fall_silent(self) -> None:
        """Stop renewing, the channel kept open (a network that carries nothing)."""
        self._writing.clear()

    def close(self) -> None:
        """Close the channel (the client's connection ended): the renewer sees EOF."""
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        self.proc.wait(10)


class Node:
    """A pool's node folder with its secrets, reusable parts and processes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "pools" / "pool-1" / "node-0"
        (self.folder / "requirements").mkdir(parents=True)
        (self.folder / "venv").mkdir()
        (self.folder / "venv" / "reusable").write_text("kept")
        for secret in ("env.sh", "requirements/pyproject.toml"):
            path = self.folder / secret
            path.write_text("export HF_TOKEN='hf_secret'\n")
            path.chmod(0o600)
        self.ended = root / "machine-ended"
        self.guardians: list[int] = []
        self.workers: list[subprocess.Popen[bytes]] = []
        self.renewers: list[Renewer] = []

    @property
    def secrets(self) -> list[Path]:
        files = (self.folder / "env.sh", self.folder / "requirements" / "pyproject.toml")
        return [path for path in files if path.exists()]

    def end_command(self) -> str:
        """Writes which secrets were still there when it ran (none, if it runs last)."""
        return f"ls {self.folder}/env.sh {self.folder}/requirements/*.toml > {self.ended} 2>/dev/null; true"

    def start_guardian(self, *, ttl: float, initial: float = 60.0, grace: float = 5.0) -> str:
        line = start_command(
            str(self.folder), ttl=ttl, initial=initial, grace=grace, end_command=self.end_command(),
            pythons=PYTHONS,
        )
        result = subprocess.run(["/bin/sh", "-c", line], input=source(), capture_output=True, timeout=30)
        answer = result.stdout.decode().strip()
        assert result.returncode == 0, (answer, result.stderr)
        word, _, pid = answer.partition(" ")
        if word == "started":
            self.guardians.append(int(pid))
        return answer

    def start_worker(
        self, code: str = "import time; time.sleep(600)", name: str = "worker-1"
    ) -> subprocess.Popen[bytes]:
        """A stand-in worker leading its own process group, recorded in `<name>.pid` as SSH does."""
        proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
        (self.folder / f"{name}.pid").write_text(f"{proc.pid}\n")
        self.workers.append(proc)
        return proc

    def renew(self) -> Renewer:
        renewer = Renewer(self.folder)
        self.renewers.append(renewer)
        return renewer

    def release(self) -> None:
        subprocess.run(["/bin/sh", "-c", release_command(str(self.folder))], check=True)

    def guardian_running(self) -> bool:
        return any(alive(pid) for pid in self.guardians)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "guardian.log").read_text()
        return ""

    def cleanup(self) -> None:
        for renewer in self.renewers:
            with contextlib.suppress(Exception):
                renewer.close()
        for pid in self.guardians:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.workers:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
