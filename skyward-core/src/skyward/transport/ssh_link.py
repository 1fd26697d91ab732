"""The client's end of a worker's keeper (`skyward.transport.keeper`): a link that survives a drop.

A worker on an SSH node runs under a keeper, so that a dropped connection does not end it. The
client keeps what it wrote until the keeper says it has it (`SentLog`), counts what it received,
and, when the channel is lost, logs in again with backoff and attaches a new channel to the same
keeper: each side then sends what the other missed (see the keeper's docstring). Only when no
attachment succeeds within the grace period (`Resume.grace`, the pool's lease `ttl` by default)
is the node lost, and its tasks retried, as when a worker dies.

`keeper_command` and `attach_command` are the shell lines of the two exec requests.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from skyward.transport.keeper_stream import ACK, END, HEADER, MAGIC, RESUME

#: The client acknowledges what it received after this many bytes, or this many seconds.
ACK_EVERY = 1024 * 1024
ACK_DELAY = 0.5
#: How long one attachment may take once the connection is up (the keeper answers at once).
ATTACH_TIMEOUT = 20.0
#: The first pause between attempts to reattach (doubling up to `MAX_PAUSE`).
FIRST_PAUSE = 0.5
MAX_PAUSE = 5.0


@attrs.frozen
class Resume:
    """How a channel comes back to its keeper: `reconnect(timeout)` gives a live connection to
    the node (the host key verified as at the first login), `command` attaches to the keeper,
    and the node is lost after `grace` seconds without a link (0: at once)."""

    reconnect: Callable[[float], Awaitable[Any]]
    command: str
    grace: float


def ack_frame(received: int) -> bytes:
    """A keeper-only frame: the client has the first `received` bytes of the keeper's stream."""
    return HEADER.pack(ACK, 0, 0, received, 0)


def end_frame() -> bytes:
    """A keeper-only frame: the pool closes the worker (its stdin ends after what came before)."""
    return HEADER.pack(END, 0, 0, 0, 0)


def greeting(received: int) -> bytes:
    """What a channel writes first on an attachment: how much of the keeper's stream it has."""
    return RESUME.pack(MAGIC, received)


class SentLog:
    """What the client wrote to the keeper, by offset in its stream, until the keeper has it."""

    def __init__(self) -> None:
        self._chunks: deque[Any] = deque()
        self.start = 0  # offset of the first chunk kept
        self.end = 0

    def add(self, data: Any) -> None:
        self._chunks.append(data)
        self.end += len(data)

    def acked(self, upto: int) -> None:
        """The keeper has every byte before `upto`."""
        chunks = self._chunks
        while chunks and self.start + len(chunks[0]) <= upto:
            self.start += len(chunks.popleft())

    def since(self, offset: int) -> list[Any]:
        """What was written from `offset` on (the keeper's count on an attachment)."""
        if offset < self.start:
            raise ConnectionError(
                f"the keeper asked for bytes from {offset}, but the client keeps them from {self.start} only"
            )
        out, at = [], self.start
        for chunk in self._chunks:
            if at + len(chunk) > offset:
                out.append(memoryview(chunk).cast("B")[max(0, offset - at) :])
            at += len(chunk)
        return out

    @property
    def held(self) -> int:
        return self.end - self.start


class LinkWriter:
    """The channel the `Outbox` writes to: the current SSH channel, or none while the link is
    down; everything written is kept in `log` until the keeper has it."""

    def __init__(self, chan: Any, *, keep: bool) -> None:
        self.chan = chan
        self.log = SentLog() if keep else None
        self._limits: tuple[int, int] | None = None

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self._limits = (high, low)
        if self.chan is not None:
            self.chan.set_write_buffer_limits(high, low)

    def write(self, data: Any) -> None:
        if self.log is None:
            self.chan.write(data)  # no keeper: a failure ends the channel, as it always did
            return
        self.log.add(data)
        if self.chan is not None:
            try:
                self.chan.write(data)
            except Exception:  # noqa: BLE001 - asyncssh's errors: the link is down
                self.chan = None  # kept in the log; the loss is reported by the session

    def detach(self) -> None:
        self.chan = None

    def attach(self, chan: Any, keeper_has: int) -> None:
        """Use `chan` from now on, after sending it what the keeper does not have."""
        assert self.log is not None
        self.log.acked(keeper_has)
        missed = self.log.since(keeper_has)
        if self._limits is not None:
            chan.set_write_buffer_limits(*self._limits)
        for piece in missed:
            chan.write(piece)
        self.chan = chan


# -- the exec requests ---------------------------------------------------------------------------------


def keeper_command(
    launch_line: str, *, python: str, env_file: str, pid_file: str, cwd: str, grace: float,
    after: str = "", check: str = "",
) -> str:
    """The exec request that starts a worker under its keeper. The worker's pid is recorded in
    `pid_file` and said on stderr; the keeper's own in `<pid_file>.keeper.pid`; the keeper's socket
    is `socket_name(pid_file)` in the node folder.

    `after`: a file (in `cwd`) that the node's bootstrap writes its exit status into as it ends
    (`skyward.bootstrap.phases.STATUS_VARIABLE`): the request is sent while the bootstrap runs, and
    the worker starts on the node as soon as it succeeded, with no round trip between them. The
    waiting shell is recorded in `pid_file` meanwhile (what ends a pool's workers ends it too);
    a failed bootstrap ends it.

    `check`: a shell command run first, whose failure ends the request (a start sent on a
    recorded home checks that it is the login's: `skyward.providers.remote_login.home_check`).
    """
    q = shlex.quote
    keeper = (
        f"{q(python)} -m skyward._keeper start --socket {q(socket_name(pid_file))} "
        f"--pid-file {q(pid_file)} --keeper-pid-file {q(keeper_pid_file(pid_file))} --grace {float(grace)} "
        f"{q(launch_line)}"
    )
    wait = ""
    if after:
        from skyward.transport.ssh_commands import record_pid

        s, waiting = q(after), q(waiting_pid_file(pid_file))
        # While it waits the shell is recorded apart from the pool's pid files: a guardian still
        # ending a killed client's lease in this folder kills what they name, and this start is
        # not that client's. It stops waiting when its SSH session is gone (its parent changed:
        # the client went), and after an hour at most; the client kills it when it gives up.
        # It looks every 20 ms for a second (a warm node's bootstrap ends within it), then every
        # 100 ms: each look forks a `sleep`, and a cold bootstrap lasts seconds to minutes.
        wait = (
            f"{record_pid(waiting_pid_file(pid_file))} && __n=0 && __pp=$PPID && __t=0.02 && "
            f"until [ -e {s} ]; do __n=$((__n + 1)); [ $__n -lt {WAIT_TICKS} ] || exit 1; "
            f"[ $__n -lt {FAST_TICKS} ] || __t=0.1; "
            "if read -r __l < /proc/$$/stat 2>/dev/null; then set -- ${__l##*) }; "
            '[ "$2" = "$__pp" ] || exit 1; fi; sleep $__t; done && '
            f"rm -f {waiting} && {record_pid(pid_file)} && __st=$(cat {s}) && rm -f {s} && "
            '{ [ "$__st" = 0 ] || { echo "skyward: the bootstrap failed; no worker starts" >&2; '
            "exit 1; }; } && "
        )
    # Sent before the bootstrap, the request may find no node folder yet (the bootstrap makes it).
    enter = f"(umask 077 && mkdir -p {q(cwd)}) && cd {q(cwd)}" if after else f"cd {q(cwd)}"
    enter = f"{check} && {enter}" if check else enter
    script = f"{enter} && {wait}. {q(env_file)} && exec {keeper}"
    return f"exec /bin/sh -c {q(script)}"


def attach_command(*, python: str, env_file: str, pid_file: str, cwd: str) -> str:
    """The exec request that attaches a new channel to the keeper of the worker `pid_file` names."""
    q = shlex.quote
    script = (
        f"cd {q(cwd)} && . {q(env_file)} && "
        f"exec {q(python)} -m skyward._keeper attach --socket {q(socket_name(pid_file))}"
    )
    return f"exec /bin/sh -c {q(script)}"


#: How many looks a worker's start waiting on its bootstrap's status makes every 20 ms (a second),
#: before it looks every 100 ms.
FAST_TICKS = 50
#: How many looks it makes at most: a second of fast ones, then an hour of slow ones.
WAIT_TICKS = FAST_TICKS + 36_000


def waiting_pid_file(pid_file: str) -> str:
    """Where a worker's start records its shell while it waits for the bootstrap: not a `*.pid`
    file, which a guardian ending an earlier lease in the folder would kill."""
    return f"{pid_file}.waiting"


def socket_name(pid_file: str) -> str:
    """The keeper's socket, relative to the node folder (a unix socket's path is short)."""
    name = pid_file.rsplit("/", 1)[-1]
    return (name[: -len(".pid")] if name.endswith(".pid") else name) + ".sock"


def keeper_pid_file(pid_file: str) -> str:
    return (pid_file[: -len(".pid")] if pid_file.endswith(".pid") else pid_file) + ".keeper.pid"
