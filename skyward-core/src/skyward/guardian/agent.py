"""The guardian itself: the program that runs on a node beside the pool's worker.

This file, with `processes.py` spliced in (`skyward.guardian.source`), is what the client uploads
and starts (`python3 <dir>/guardian.py start ...`), so it uses the standard library only and
nothing of Skyward: it runs before the bootstrap has installed anything, under any Python 3.8+,
and nothing a task does in the worker can reach it.
The design is in the package docstring (`skyward.guardian`); the subcommands:

    start   --dir D --ttl T --initial I [--grace G] [--end-command C]
            become a daemon (own session, stdio on guardian.log) unless one already guards D;
            then hand it C instead (`guardian.end-command`): a login adopting the guardian
            started at boot brings the end command the pool resolved for this machine
    run     the same, in the foreground
    renew   --dir D: one renewer; every chunk read on stdin renews the lease, EOF ends it
    release --dir D: the pool stopped cleanly; the guardian exits and ends nothing

Every file it keeps is in D: `guardian.lock` (its pid, held under an exclusive flock while it
runs: the lock, not the pid, says whether one runs), `guardian.lease` (touched by renewers),
`renew-<pid>.live` (one per open renewer), `guardian.release`, `guardian.end-command`,
`guardian.claim` (touched by a start that found a guardian: its client is back),
`guardian.ending` (the lease lapsed and the guardian is ending it) and `guardian.log`.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import os
import signal
import subprocess
import sys
import time

# The node's processes (processes.py): the uploaded file has that module's body here instead of
# this line (`skyward.guardian.source`), so the node needs no Skyward installed.
from skyward.guardian.processes import alive, group_members, signal_group, started_at  # spliced

LOCK = "guardian.lock"
LEASE = "guardian.lease"
LOG = "guardian.log"
RELEASE = "guardian.release"
RENEWER = "renew-{pid}.live"
#: The end command a later start handed the running guardian (it replaces the one it started with).
END_COMMAND = "guardian.end-command"
#: Written when the guardian finds the lease lapsed, before it ends anything (`Guardian.confirm_end`).
ENDING = "guardian.ending"
#: Touched by a start that finds this guardian running: the pool's client is back (`Lease.claim`).
CLAIM = "guardian.claim"
#: The pool's files that hold secrets (image env, index credentials, volume keys and the bootstrap
#: op that writes them), relative to the node folder.
SECRETS = ("env.sh", "requirements/*.toml", "requirements/*.txt", "volumes/rclone.conf", "bootstrap/*.sh")
#: Pid files of the pool's process groups (workers, the bootstrap), relative to the node folder.
PID_FILES = ("*.pid",)
#: With ttl=0 the lease ends when the renewers' connection closes; a connection that stays open
#: but carries nothing (a network partition TCP has not noticed) ends it after this long.
ZERO_TTL_SILENCE = 15.0
#: Seconds between the guardian's looks at the lease.
TICK = 0.25
#: How long a start's claim holds the lease, whatever the ttl: time for its client to open its
#: renewer, which it does right after the start's answer (a channel and a Python start).
CLAIM_HOLD = 10.0
#: How long the machine's end command may run.
END_COMMAND_TIMEOUT = 120.0
#: The pool's exit scripts, relative to the node folder (`skyward.bootstrap.volumes.EXIT_DIR`).
EXIT_DIR = "exit.d"


class Lease:
    """When the client's lease lapses, from what the guardian observes (monotonic seconds).

    Until the first renewal the initial lease holds (`initial` seconds from the start: the
    client's bootstrap time plus ttl). After it, the lease lapses `ttl` seconds after the last
    renewal; with `ttl == 0`, as soon as no renewer is open (or after `ZERO_TTL_SILENCE` of an
    open but silent one).

    A start that finds the guardian running (a client that came back) claims the lease: it then
    holds for at least `CLAIM_HOLD` seconds, so that client can open its renewer. A claim is not a
    renewal: it leaves the initial lease, and the ttl=0 rule, as they were once it has passed.
    """

    def __init__(self, ttl: float, initial: float, started: float) -> None:
        self.ttl = max(float(ttl), 0.0)
        self.initial = max(float(initial), 0.0)
        self.started = started
        self.renewed: float | None = None
        self.claimed: float | None = None

    def renew(self, now: float) -> None:
        self.renewed = now

    def claim(self, now: float) -> None:
        self.claimed = now

    def lapsed(self, now: float, open_renewers: int) -> bool:
        if self.claimed is not None and now - self.claimed <= CLAIM_HOLD:
            return False
        if self.renewed is None:
            return now - self.started > self.initial
        if self.ttl == 0:
            return open_renewers == 0 or now - self.renewed > ZERO_TTL_SILENCE
        return now - self.renewed > self.ttl


# -- the guardian ----------------------------------------------------------------------------------


class Guardian:
    def __init__(self, folder: str, ttl: float, initial: float, grace: float, end_command: str) -> None:
        self.dir = os.path.abspath(folder)
        self.lease = Lease(ttl, initial, time.monotonic())
        self.grace = grace
        self.end_command = end_command
        #: The mtime (ns) of `LEASE` and `CLAIM` when last looked at.
        self._mtimes: dict[str, int] = {}

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def log(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        with contextlib.suppress(OSError), open(self.path(LOG), "a") as f:
            f.write(f"{stamp} {message}\n")

    def open_renewers(self) -> int:
        count = 0
        for file in glob.glob(self.path(RENEWER.format(pid="*"))):
            try:
                pid = int(os.path.basename(file)[len("renew-"):-len(".live")])
            except ValueError:
                continue
            if alive(pid):
                count += 1
            else:  # a renewer killed outright (sshd gone) leaves its file behind
                with contextlib.suppress(OSError):
                    os.unlink(file)
        return count

    def observe(self, now: float) -> None:
        """A renewal is a change of the lease file's mtime, a claim one of the claim file's, timed
        by this process's own clock."""
        if self._touched(LEASE):
            self.lease.renew(now)
        if self._touched(CLAIM):
            self.lease.claim(now)

    def _touched(self, name: str) -> bool:
        try:
            mtime = os.stat(self.path(name)).st_mtime_ns
        except OSError:
            return False
        if mtime == self._mtimes.get(name):
            return False
        self._mtimes[name] = mtime
        return True

    def watch(self) -> str:
        """Wait for the lease to lapse ("lapsed"), the pool to release it, or its folder to go."""
        while True:
            if not os.path.isdir(self.dir):
                return "gone"
            if os.path.exists(self.path(RELEASE)):
                return "released"
            now = time.monotonic()
            self.observe(now)
            if self.lease.lapsed(now, self.open_renewers()) and self.confirm_end():
                # A folder removed just before its renewer closed is a clean stop seen late
                # (the client removes the folder, then drops the connection), not a lapse.
                return "lapsed" if os.path.isdir(self.dir) else "gone"
            time.sleep(TICK)

    def confirm_end(self) -> bool:
        """Whether the lapsed lease stays lapsed once `ENDING` is on disk.

        A client that comes back (a restarted pool server adopting its pool, a lingering machine's
        next pool) starts the guardian again, and that start claims the lease (`CLAIM`) and then
        looks for `ENDING` (`_outlast_ending`). Here the mark is written first, and the claim and
        the lease are looked at once more. Each side writes before it reads, so at least one of
        them sees the other: either this guardian sees the claim and keeps guarding (the mark
        goes), or the start sees the mark and waits for this guardian's end before it guards the
        folder itself. Without the mark, a start that came as the lease lapsed answered "running"
        for a guardian about to end that client's new bootstrap, remove its secrets and exit,
        leaving the pool without a guardian.
        """
        _touch(self.path(ENDING))
        now = time.monotonic()
        self.observe(now)
        if not self.lease.lapsed(now, self.open_renewers()):
            with contextlib.suppress(OSError):
                os.unlink(self.path(ENDING))
            self.log("a client came back as the lease lapsed: it holds")
            return False
        return True

    def groups(self) -> list[int]:
        """The process groups the pid files name. A pid whose process started after its file was
        written is another process that reused a number freed long ago: it is left alone."""
        pids = []
        for pattern in PID_FILES:
            for file in glob.glob(self.path(pattern)):
                try:
                    with open(file) as f:
                        pid = int(f.read().split()[0])
                    written = os.stat(file).st_mtime
                except (OSError, ValueError, IndexError):
                    continue
                start = started_at(pid)
                if pid > 1 and pid != os.getpid() and (start is None or start <= written + 2):
                    pids.append(pid)
        return sorted(set(pids))

    def stop_processes(self) -> None:
        """SIGTERM every process group of the pool (the worker runs its plugins' exits), then
        SIGKILL whatever still runs `grace` seconds later."""
        groups = self.groups()
        for pgid in groups:
            signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        left = groups
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [pgid for pgid in left if group_members(pgid) or alive(pgid)]
        for pgid in left:
            signal_group(pgid, signal.SIGKILL)
        killed = f"; killed {left} after {self.grace}s" if left else ""
        self.log(f"stopped process groups {groups}{killed}")

    def remove_secrets(self) -> None:
        removed = []
        for pattern in SECRETS + PID_FILES:
            for file in glob.glob(self.path(pattern)):
                with contextlib.suppress(OSError):
                    os.unlink(file)
                    removed.append(os.path.relpath(file, self.dir))
        self.log(f"removed {removed}")

    def current_end_command(self) -> str:
        """The end command a later start handed over (`END_COMMAND`), else the one started with."""
        with contextlib.suppress(OSError), open(self.path(END_COMMAND)) as f:
            handed = f.read().strip()
            if handed:
                return handed
        return self.end_command

    def end_machine(self) -> None:
        command = self.current_end_command()
        if not command:
            return
        self.log(f"running the end command: {command}")
        with open(self.path(LOG), "ab") as out:
            try:
                result = subprocess.run(
                    ["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                    timeout=END_COMMAND_TIMEOUT, check=False, cwd="/",
                )
                self.log(f"the end command exited with {result.returncode}")
            except (OSError, subprocess.TimeoutExpired) as exc:
                self.log(f"the end command failed: {exc!r}")

    def run_exit_scripts(self) -> None:
        """The pool's exit scripts (`exit.d/*.sh`: its volumes' unmount and last uploads), as the
        client would run them at a clean exit; before the secrets they need are removed."""
        scripts = sorted(glob.glob(self.path(os.path.join(EXIT_DIR, "*.sh"))))
        for script in scripts:
            with open(self.path(LOG), "ab") as out:
                try:
                    result = subprocess.run(
                        ["bash", script], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                        timeout=END_COMMAND_TIMEOUT, check=False, cwd=self.dir,
                    )
                    self.log(f"{os.path.basename(script)} exited with {result.returncode}")
                except (OSError, subprocess.TimeoutExpired) as exc:
                    self.log(f"{os.path.basename(script)} failed: {exc!r}")

    def end(self) -> None:
        self.stop_processes()
        self.run_exit_scripts()
        self.remove_secrets()
        self.end_machine()

    def run(self) -> int:
        lease = self.lease
        self.log(f"guarding {self.dir} (pid {os.getpid()}, ttl {lease.ttl}s, initial {lease.initial}s)")
        why = self.watch()
        self.log(f"the lease {why}")
        if why == "lapsed":
            self.end()
        # The lock before the mark: a start waiting on the mark finds the lock free once it is gone.
        for name in (LEASE, RELEASE, END_COMMAND, CLAIM, LOCK, ENDING):
            with contextlib.suppress(OSError):
                os.unlink(self.path(name))
        return 0


# -- subcommands -----------------------------------------------------------------------------------


def _lock(folder: str) -> int | None:
    """Take the folder's guardian lock; None when another guardian holds it."""
    fd = os.open(os.path.join(folder, LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _hand_over(folder: str, end_command: str) -> None:
    """Give the running guardian `end_command` (written whole, then renamed into place: the
    guardian reads either the old file or the new one, never half of one)."""
    target = os.path.join(folder, END_COMMAND)
    partial = f"{target}.{os.getpid()}"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(end_command + "\n")
    os.replace(partial, target)


def _holder(folder: str) -> str:
    with contextlib.suppress(OSError), open(os.path.join(folder, LOCK)) as f:
        return f.read().strip()
    return "?"


def _guard(args: argparse.Namespace, ready: int | None = None) -> int:
    os.makedirs(args.dir, mode=0o700, exist_ok=True)
    lock = _lock(args.dir)
    if lock is None:
        lock = _outlast_ending(args.dir)
    if lock is None:
        if args.end_command:
            _hand_over(args.dir, args.end_command)
        message = f"running {_holder(args.dir)}\n"
        if ready is not None:
            os.write(ready, message.encode())
        else:
            sys.stdout.write(message)
        return 0
    # A mark left by a guardian killed while it was ending would hold every later start up.
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(args.dir, ENDING))
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    guardian = Guardian(args.dir, args.ttl, args.initial, args.grace, args.end_command or "")
    if ready is not None:
        os.write(ready, f"started {os.getpid()}\n".encode())
        os.close(ready)
    else:
        sys.stdout.write(f"started {os.getpid()}\n")
        sys.stdout.flush()
    return guardian.run()


def _outlast_ending(folder: str) -> int | None:
    """The start of a client that finds a guardian in `folder`: claim its lease (the client is
    back), then, if that guardian is ending the lease already (`ENDING`, see
    `Guardian.confirm_end`), wait until it has ended everything and gone, and take the lock. None
    when the guardian keeps guarding (it saw the claim, or was never ending)."""
    _touch(os.path.join(folder, CLAIM))
    ending = os.path.join(folder, ENDING)
    while os.path.exists(ending):
        time.sleep(TICK / 5)
        lock = _lock(folder)  # free once the ending guardian removed it, before the mark
        if lock is not None:
            return lock
    return _lock(folder)  # the mark went with its guardian, or the guardian kept guarding


def start(args: argparse.Namespace) -> int:
    """Fork a guardian into a session of its own (it outlives the SSH command that started it),
    its stdio on the log, and print "started <pid>" or "running <pid>" once it holds the lock."""
    os.makedirs(args.dir, mode=0o700, exist_ok=True)
    read, write = os.pipe()
    if os.fork() > 0:
        os.close(write)
        answer = b""
        while True:
            chunk = os.read(read, 256)
            if not chunk:
                break
            answer += chunk
        sys.stdout.write(answer.decode() or "failed\n")
        return 0 if answer else 1
    os.close(read)
    os.closerange(3, write)
    os.closerange(write + 1, 256)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    log = os.open(os.path.join(args.dir, LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
    os.chdir("/")
    try:
        code = _guard(args, ready=write)
    except BaseException as exc:  # noqa: BLE001 - a daemon has nobody else to tell
        sys.stderr.write(f"guardian failed: {exc!r}\n")
        code = 1
    os._exit(code)


def renew(args: argparse.Namespace) -> int:
    """Renew the lease for every chunk read on stdin, until EOF (the client's channel closed)."""
    folder = os.path.abspath(args.dir)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    mine = os.path.join(folder, RENEWER.format(pid=os.getpid()))
    lease = os.path.join(folder, LEASE)
    open(mine, "w").close()
    try:
        while True:
            _touch(lease)
            try:
                if not os.read(0, 4096):
                    return 0
            except InterruptedError:
                continue
            except OSError:
                return 0
    finally:
        with contextlib.suppress(OSError):
            os.unlink(mine)


def _touch(path: str) -> None:
    try:
        os.utime(path)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


def release(args: argparse.Namespace) -> int:
    folder = os.path.abspath(args.dir)
    if os.path.isdir(folder):
        open(os.path.join(folder, RELEASE), "w").close()
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m skyward.guardian", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    for name in ("start", "run"):
        sub = commands.add_parser(name)
        sub.add_argument("--dir", required=True, help="the pool's folder on this node")
        sub.add_argument("--ttl", type=float, required=True, help="seconds a lapsed client may stay gone")
        sub.add_argument("--initial", type=float, required=True, help="the lease before the first renewal")
        sub.add_argument("--grace", type=float, default=30.0, help="SIGTERM to SIGKILL, in seconds")
        sub.add_argument("--end-command", default="", help="ends this machine (cloud); empty: none")
    for name in ("renew", "release"):
        commands.add_parser(name).add_argument("--dir", required=True)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "start":
        return start(args)
    if args.command == "run":
        return _guard(args)
    if args.command == "renew":
        return renew(args)
    return release(args)


if __name__ == "__main__":
    sys.exit(main())
