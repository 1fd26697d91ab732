"""Where Slurm's commands run: here (`login=None`) or on the login node over SSH (`login=...`).

Both places offer the same four things: run a short command (`sbatch`, `squeue`, `scancel`),
write a small file (the job's lease), a bootstrap runner (`skyward.bootstrap.CommandRunner`) for
the venv in the shared home folder, and a worker's channel, whose stream is the standard input
and output of an `srun` step: a local `srun` process's pipes, or an SSH exec channel on the login
node whose command is that `srun`. No port is opened anywhere.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import threading
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from skyward.errors import ConfigurationError
from skyward.transport.pipes import PipeChannel
from skyward.transport.ssh import SSHChannel

if TYPE_CHECKING:
    from skyward.transport.base import Channel
    from skyward.transport.ssh_connect import Connection


@attrs.frozen
class Result:
    code: int
    stdout: str
    stderr: str


class Place(Protocol):
    """A machine where `sbatch`/`srun` work, and the user's (shared) home folder on it."""

    home: str
    label: str

    async def run(self, command: str, *, timeout: float = 60.0, stdin: str | None = None) -> Result: ...

    def runner(self, pid_file: str) -> Any: ...

    async def channel(self, command: str, label: str, pid_file: str, cancel: str) -> Channel: ...

    async def close(self) -> None: ...


class LocalPlace:
    """This machine: a login node, or one whose `SLURM_CONF` names the cluster."""

    label = "this machine"

    def __init__(self) -> None:
        self.home = os.path.expanduser("~")

    async def run(self, command: str, *, timeout: float = 60.0, stdin: str | None = None) -> Result:
        done = await asyncio.to_thread(
            subprocess.run,
            ["bash", "-c", command],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def runner(self, pid_file: str) -> Any:
        from skyward.bootstrap.runner import LocalRunner

        return LocalRunner()

    async def channel(self, command: str, label: str, pid_file: str, cancel: str) -> Channel:
        """`srun` as this client's child; killing the channel also runs `cancel` (the step's
        `scancel`): a step whose `srun` is killed may keep its task running."""
        from skyward.bootstrap.runner import clean_environment

        # The worker is on a compute node: no shared memory with it, whatever the host names say.
        channel = SrunPipe(["bash", "-c", command], env=clean_environment(), shared_memory=False)
        channel.cancel = cancel
        channel.spawn()
        return channel

    async def close(self) -> None:
        return None


class SSHPlace:
    """The login node, over one SSH connection (host key checked against `known_hosts`), opened
    again when it has dropped: a lost worker then restarts over the new one."""

    def __init__(self, target: str, *, key_file: str | None, known_hosts: str | None, timeout: float) -> None:
        from skyward.providers.ssh import parse_host

        self.target = target
        self.label = str(parse_host(target))
        self.home = ""
        self._settings = {"key_file": key_file, "known_hosts": known_hosts}
        self._timeout = timeout
        self._conn: Connection | None = None
        self._lock = asyncio.Lock()

    @classmethod
    async def open(
        cls, target: str, *, key_file: str | None, known_hosts: str | None, timeout: float
    ) -> SSHPlace:
        place = cls(target, key_file=key_file, known_hosts=known_hosts, timeout=timeout)
        await place.connection()
        return place

    async def connection(self) -> Connection:
        """The live connection, logging in again if it dropped; the first login learns $HOME."""
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            import time

            from skyward.providers.ssh import parse_host
            from skyward.transport.ssh_connect import connect_with_retry

            host = parse_host(self.target)
            conn = await connect_with_retry(
                host.host,
                host.port,
                host.user or None,
                deadline=time.monotonic() + self._timeout,
                **self._settings,
            )
            if not self.home:
                result = await conn.run('printf "%s\\n" "$HOME"', check=False)
                home = str(result.stdout or "").strip()
                if not home.startswith("/"):
                    conn.close()
                    raise ConfigurationError(
                        f"Slurm(login={self.target!r}): the login node did not report a home folder"
                    )
                self.home = home
            self._conn = conn
            return conn

    async def run(self, command: str, *, timeout: float = 60.0, stdin: str | None = None) -> Result:
        conn = await self.connection()
        done = await asyncio.wait_for(conn.run(command, input=stdin, check=False), timeout)
        return Result(int(done.exit_status or 0), str(done.stdout or ""), str(done.stderr or ""))

    def runner(self, pid_file: str) -> Any:
        from skyward.transport.ssh_commands import SSHRunner

        assert self._conn is not None
        return SSHRunner(self._conn, label=self.label, pid_file=pid_file)

    async def channel(self, command: str, label: str, pid_file: str, cancel: str) -> Channel:
        """`srun` on the login node, its pid in `pid_file` there; killing the channel kills it and
        runs `cancel` (the step's `scancel`), so a worker stuck in a task is gone."""
        from skyward.transport.ssh_commands import record_pid

        recorded = f"{record_pid(pid_file)}; {command}"
        channel = SrunSSH(await self.connection(), recorded, label=label, pid_file=pid_file)
        channel.cancel = cancel
        return await channel.open()

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _run_quietly(command: str) -> None:
    subprocess.run(["bash", "-c", command], capture_output=True, timeout=60, check=False)


class SrunPipe(PipeChannel):
    """A local `srun`'s pipes; its kill also cancels the step (`cancel`)."""

    cancel = ""

    def kill(self) -> None:
        super().kill()
        if self.cancel:
            threading.Thread(target=_run_quietly, args=(self.cancel,), daemon=True).start()


class SrunSSH(SSHChannel):
    """`srun` over SSH on the login node; its kill also cancels the step there (`cancel`)."""

    cancel = ""
    _cancelling: asyncio.Future[Any] | None = None

    def kill(self) -> None:
        super().kill()
        if self.cancel and self._cancelling is None and not self._conn.is_closed():
            self._cancelling = asyncio.ensure_future(self._conn.run(self.cancel, check=False))


def step_cancel(job: str, step_file: str) -> str:
    """sh: cancel the step whose id the worker's shell wrote into `step_file` (nothing if none)."""
    q = shlex.quote
    return f's=$(cat {q(step_file)} 2>/dev/null) && [ -n "$s" ] && scancel {q(job)}."$s"; true'


def srun_line(job: str, node: str, workdir: str, launch_line: str, gres: str | None, step_file: str) -> str:
    """The shell line that starts one worker as an `srun` step on `node` of `job`.

    `--overlap`: the job's batch step (its guardian) holds the node's CPUs, and the steps share
    them. `--unbuffered`: slurmstepd otherwise holds a worker's output until a newline, and the
    protocol's frames are binary. The reply lane's descriptor exists only on the client's side of
    `srun`, so the worker is told of none.
    """
    q = shlex.quote
    inner = (
        f'echo "$SLURM_STEP_ID" > {q(step_file)}; unset SKYWARD_REPLY_FD; cd {q(workdir)} && {launch_line}'
    )
    opts = [
        f"--jobid={job}",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={node}",
        "--overlap",
        "--quiet",
        "--kill-on-bad-exit=1",
        "--input=all",
        "--unbuffered",
    ]
    if gres:
        opts.append(f"--gres={gres}")
    return f"exec srun {' '.join(q(o) for o in opts)} /bin/sh -c {q(inner)}"
