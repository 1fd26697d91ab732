"""Run a rendered bootstrap on a node and turn its output into events, or into `BootstrapFailed`.

A `CommandRunner` is the only thing a provider supplies: run a shell command on the node (streaming
its lines back) and copy files there. `LocalRunner` does both on this machine; the SSH transport
implements the same two methods over an SSH connection. `run_bootstrap` is the same for all.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol

from skyward.bootstrap.render import RESUME, Script
from skyward.errors import BootstrapFailed
from skyward.observe.events import (
    BootstrapCommand,
    BootstrapConsole,
    BootstrapPhase,
    BootstrapPhaseFailed,
)
from skyward.secrets import mask_secrets

__all__ = [
    "DRAIN_GRACE", "TAIL_LINES", "CommandRunner", "LocalRunner", "RunnerConnectionLost",
    "clean_environment", "new_progress", "run_bootstrap",
]

#: How many lines of output a failure carries.
TAIL_LINES = 30
#: After the command exits, how long to keep reading output a leftover background process may hold
#: (every runner: the command's exit status is what counts, not when its output closes).
DRAIN_GRACE = 2.0
#: Variables of the client's interpreter that must not leak into a node's own Python.
_PYTHON_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONEXECUTABLE", "VIRTUAL_ENV",
               "__PYVENV_LAUNCHER__", "CONDA_PREFIX", "CONDA_DEFAULT_ENV")

LineHandler = Callable[[str, str], None]


class RunnerConnectionLost(ConnectionError):
    """A `CommandRunner` lost its connection to the node while a command ran or a file was copied.

    Only runners that reach their node over a network raise it (`SSHRunner`). Whether the command
    still runs on the node is unknown; the message names the host and what was being done.
    """


class CommandRunner(Protocol):
    """Runs shell commands on one node and copies files to it."""

    async def run(self, command: str, *, stdin: str | None, on_line: LineHandler, timeout: float) -> int:
        """Run `command` with a POSIX shell on the node, feeding it `stdin` (then EOF; /dev/null when None).

        `on_line(stream, line)` is called for each line of "stdout" / "stderr" as it arrives, without
        the newline. Returns the exit status; raises `asyncio.TimeoutError` after `timeout` seconds,
        having stopped the command. Cancelling the call stops the command too.
        """
        ...

    async def put(self, local: Path, remote: str) -> None:
        """Copy the file or directory `local` to the path `remote` (not into it), creating parents.

        A directory is copied recursively and merged into an existing `remote`; filtering (excludes)
        is the caller's job.
        """
        ...


def clean_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) without the client interpreter's Python variables."""
    result = dict(os.environ if env is None else env)
    for name in _PYTHON_ENV:
        result.pop(name, None)
    return result


class LocalRunner:
    """`CommandRunner` for this machine: `bash -c` subprocesses and file copies."""

    def __init__(self, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self._env = clean_environment(env)
        self._cwd = cwd

    async def run(self, command: str, *, stdin: str | None, on_line: LineHandler, timeout: float) -> int:
        # subprocess.Popen rather than asyncio's subprocesses: on 3.11 their wait() also waits for
        # the pipes to close, which a daemon started by the script may never do.
        proc = subprocess.Popen(
            ["bash", "-c", command],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._env,
            cwd=self._cwd,
            start_new_session=True,  # its own process group, so a timeout stops uv & co. as well
        )
        loop = asyncio.get_running_loop()
        assert proc.stdout is not None and proc.stderr is not None
        readers = [
            _LineReader(loop, proc.stdout.fileno(), "stdout", on_line),
            _LineReader(loop, proc.stderr.fileno(), "stderr", on_line),
        ]
        feeder = None
        try:
            async with asyncio.timeout(timeout):
                if stdin is not None:
                    assert proc.stdin is not None
                    feeder = asyncio.ensure_future(asyncio.to_thread(_feed, proc.stdin, stdin.encode()))
                code = await _exited(loop, proc)
            # A daemon the script left behind may hold the pipes open: read what is there, but do
            # not wait for it to exit (outside the timeout: a script that exited in time did not
            # time out).
            await asyncio.wait([r.done for r in readers], timeout=DRAIN_GRACE)
            return code
        finally:
            if proc.poll() is None:
                _kill_group(proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.to_thread(proc.wait)
            for reader in readers:
                reader.close()
            if feeder is not None:
                with contextlib.suppress(Exception):
                    await feeder
            for pipe in (proc.stdout, proc.stderr):
                pipe.close()

    async def put(self, local: Path, remote: str) -> None:
        await asyncio.to_thread(_copy, Path(local), Path(remote))


def _copy(local: Path, remote: Path) -> None:
    remote.parent.mkdir(parents=True, exist_ok=True)
    if local.is_dir():
        shutil.copytree(local, remote, dirs_exist_ok=True, symlinks=True)
    else:
        shutil.copy2(local, remote)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _feed(pipe: Any, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        pipe.write(data)
        pipe.flush()
    with contextlib.suppress(OSError):
        pipe.close()


async def _exited(loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes]) -> int:
    """Wait for `proc` to exit without a blocked thread where the OS has pidfds (Linux 5.3+)."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return await asyncio.to_thread(proc.wait)
    exited = loop.create_future()
    def on_exit() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(pidfd, on_exit)
    try:
        await exited
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    return proc.wait()


class _LineReader:
    """Reads a pipe on the loop and hands complete lines to `on_line` (no line-length limit)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, name: str, on_line: LineHandler) -> None:
        self.loop, self.fd, self.name, self.on_line = loop, fd, name, on_line
        self.pending = b""
        self.done: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.close()
            return
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        for line in lines:
            self.on_line(self.name, line.rstrip(b"\r").decode(errors="replace"))

    def close(self) -> None:
        if self.done.done():
            return
        self.loop.remove_reader(self.fd)
        if self.pending:
            self.on_line(self.name, self.pending.rstrip(b"\r").decode(errors="replace"))
            self.pending = b""
        self.done.set_result(None)


class _Progress:
    """Reads the script's markers: events as they happen, and what a failure report needs."""

    def __init__(self, node: int, emit: Callable[[Any], None], secrets: tuple[str, ...]) -> None:
        self.node, self.emit, self.secrets = node, emit, secrets
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.phase = ""  # the phase running now ("" between phases)
        self.last_phase = ""
        self.started = 0.0
        self.command = ""
        self.failed_command = ""
        self.failed_phase = ""
        self.exit_code: int | None = None
        #: Called with a `::skyward-need:` line: the node asks the client for a file (`bootstrap.uv`).
        self.on_need: Callable[[str], None] | None = None
        #: Called with True (warm) or False (cold) when the script has looked for its warm
        #: environment (`environments.DECISION`): the client then uploads the wheels, or not.
        self.on_environment: Callable[[bool], None] | None = None
        #: Called with the answer of the node's guardian, started first in the script
        #: (`skyward.guardian.script_start`): "started <pid>", "running <pid>" or why not.
        self.on_guardian: Callable[[str], None] | None = None

    def mask(self, text: str) -> str:
        return mask_secrets(text, self.secrets)

    def on_line(self, stream: str, line: str) -> None:
        if stream == "stdout" and line.startswith("::skyward-") and self._marker(line):
            return
        masked = self.mask(line)
        self.tail.append(masked)
        kind: Literal["stdout", "stderr"] = "stderr" if stream == "stderr" else "stdout"
        self.emit(BootstrapConsole(node=self.node, line=masked, stream=kind))

    def _marker(self, line: str) -> bool:
        if line.startswith("::skyward-phase:"):
            rest = line[len("::skyward-phase:"):]
            name, _, state = rest.rpartition(":")
            if state in ("start", "done") and name:
                self._phase(name, state)
                return True
            head, _, code = rest.rpartition(":")
            name, _, state = head.rpartition(":")
            if state == "fail" and name and code.lstrip("-").isdigit():
                self._fail(name, int(code))
                return True
            return False
        if line.startswith("::skyward-command:"):
            self.command = self.mask(line[len("::skyward-command:"):])
            self.emit(BootstrapCommand(node=self.node, command=self.command))
            return True
        if line.startswith("::skyward-need:"):
            if self.on_need is not None:
                self.on_need(line)
            return True
        if line.startswith("::skyward-guardian:"):
            if self.on_guardian is not None:
                self.on_guardian(line[len("::skyward-guardian:") :])
            return True
        if line.startswith("::skyward-environment:"):
            if self.on_environment is not None:
                self.on_environment(line.endswith(":warm"))
            return True
        if line.startswith("::skyward-failed-command:"):
            if not self.failed_command:
                self.failed_command = self.mask(line[len("::skyward-failed-command:"):])
            return True
        return False

    def _phase(self, name: str, state: str) -> None:
        now = time.monotonic()
        if state == "start":
            self.phase, self.last_phase, self.started = name, name, now
            self.command = self.failed_command = ""
            self.emit(BootstrapPhase(node=self.node, phase=name, event="started"))
        else:
            seconds = now - self.started
            self.emit(BootstrapPhase(node=self.node, phase=name, event="completed", seconds=seconds))
            self.phase = ""

    def _fail(self, name: str, code: int) -> None:
        self.failed_phase, self.exit_code = name, code
        seconds = time.monotonic() - self.started
        self.emit(BootstrapPhase(node=self.node, phase=name, event="failed", seconds=seconds))
        self.phase = ""

    def fail_running(self) -> None:
        """The phase under way ends as failed (the run was stopped: a timeout, a lost connection)."""
        if self.phase:
            seconds = time.monotonic() - self.started
            self.emit(BootstrapPhase(node=self.node, phase=self.phase, event="failed", seconds=seconds))
            self.phase = ""

    def interrupted(self) -> None:
        """The run was cut off and will be resumed: the phase under way starts again from scratch."""
        self.phase = ""

    def note(self, line: str) -> None:
        """A line of Skyward's own in the node's output (a reconnect), kept for a failure's tail too."""
        self.on_line("stderr", line)

    def failure(self, phase: str, why: str) -> BootstrapFailed:
        command = self.failed_command or self.command
        tail = "\n".join(self.tail)
        lines = [f"Bootstrap failed on node {self.node} in phase {phase!r}: {why}"]
        if command:
            lines.append(f"command: {command}")
        lines.append(f"last {len(self.tail)} lines of output:" if self.tail else "(no output)")
        lines += [f"  | {line}" for line in self.tail]
        message = self.mask("\n".join(lines))
        self.emit(BootstrapPhaseFailed(node=self.node, phase=phase, command=command, output_tail=tail))
        return BootstrapFailed(message, node=self.node, phase=phase, command=command, output_tail=tail)


async def run_bootstrap(
    runner: CommandRunner,
    script: Script,
    *,
    node: int,
    emit: Callable[[Any], None],
    timeout: float,
    secrets: tuple[str, ...] = (),
    resume: bool = False,
    progress: _Progress | None = None,
    budget: float | None = None,
) -> None:
    """Run `script` on the node behind `runner` (`bash -s`, the script on stdin) within `timeout` seconds.

    Emits `BootstrapPhase` / `BootstrapCommand` / `BootstrapConsole` events as it goes, every string
    with `secrets` masked. On failure emits `BootstrapPhaseFailed` and raises `BootstrapFailed` naming the
    node, the phase, the failing command and the last lines of output; when `timeout` runs out the
    phase is "timeout". A lost connection raises `RunnerConnectionLost` (the caller may reconnect
    and call again with `resume=True`, which skips the plugin ops that already completed, and the
    same `progress` (see `new_progress`), so a failure still shows all the output). `budget` is the
    whole bootstrap's limit, named in the timeout message (default `timeout`).
    """
    progress = progress or new_progress(node, emit, secrets)
    command = f"{RESUME}=1 bash -s" if resume else "bash -s"
    try:
        code = await runner.run(command, stdin=script.text, on_line=progress.on_line, timeout=timeout)
    except TimeoutError:
        running = progress.phase or progress.last_phase
        progress.fail_running()
        where = f" while in phase {running!r}" if running else ""
        limit = budget if budget is not None else timeout
        raise progress.failure(
            "timeout",
            f"exceeded bootstrap_timeout={limit:g}s{where} (raise Image(bootstrap_timeout=...) or "
            "Options(bootstrap_timeout=...))",
        ) from None
    if code != 0:
        phase = progress.failed_phase or progress.phase or progress.last_phase or "bootstrap"
        raise progress.failure(phase, f"exit code {code}")


def new_progress(node: int, emit: Callable[[Any], None], secrets: tuple[str, ...] = ()) -> _Progress:
    """What reads a bootstrap's markers and output; one per node, shared by a resumed run."""
    return _Progress(node, emit, tuple(s for s in secrets if s))
