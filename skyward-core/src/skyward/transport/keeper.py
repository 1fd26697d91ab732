"""A worker's keeper on its node: the worker outlives the SSH channel that started it.

`python -m skyward._keeper start ...` is what an SSH exec channel runs to start a worker.
It forks the keeper (a session of its own, so nothing ends with the SSH session) and waits there
until the keeper lets that channel go. The keeper starts the worker on pipes and carries frames
between them and the channel's stdin/stdout; its stderr carries control lines (`MARK`).

When the link drops (the channel's stdin ends, or a write to it fails), the worker runs on. The
keeper holds what the worker writes (answers, output) until the client says it has it, and
listens on a unix socket in the node folder (no TCP port). A new channel runs `... keeper attach`,
which hands its stdin/stdout/stderr to the keeper over that socket (`SCM_RIGHTS`) and waits until
they are let go. Both ends count the bytes of each direction: a new attachment starts with the
client's count (`RESUME`), the keeper answers with its own (`::skyward-resume:N`), and each side
sends the other what came after. Nothing else is added to the stream: the keeper finds frames by
their headers (`skyward.wire.HEADER`) only to take out the client's acknowledgements (`ACK`, a
frame kind the worker never sees) and, beyond `HOLD` bytes held while no client is attached, the
worker's output (`LOG` frames, counted and replaced by one line saying how many lines were
dropped). Answers are never dropped: past `HARD`, the keeper stops reading the worker, which waits.

Nobody attaching for `--grace` seconds ends the worker (its stdin closes, then its process group
is killed), as the node's guardian does once the lease lapses.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from skyward.transport.keeper_stream import (
    ACK,
    END,
    LOG,
    MAGIC,
    MARK,
    RESUME,
    Scanner,
    count_lines,
    dropped_marker,
)

#: Bytes held that the client has not acknowledged: beyond them, the keeper stops reading the
#: worker while a client is attached (it waits, as on a full pipe), and drops the worker's output
#: while none is.
HOLD = 32 * 1024 * 1024
#: Bytes held for an absent client beyond which the keeper stops reading the worker (answers are
#: never dropped), or the client's channel.
HARD = 256 * 1024 * 1024
#: The keeper tells the client what it has after this many bytes, or within a `TICK`.
ACK_EVERY = 1024 * 1024
TICK = 0.5
READ = 1024 * 1024
#: How long an ended worker gets between its stdin closing and its process group's SIGKILL.
END_GRACE = 5.0
#: Bytes of the worker's stderr kept while no client is attached (its last words, if it dies).
ERR_TAIL = 8192


class Attachment:
    """One SSH channel's stdin/stdout/stderr, and what holds its process until it is let go."""

    def __init__(self, fds: tuple[int, int, int], hold: Any) -> None:
        self.inp, self.out, self.err = fds
        self.hold = hold
        self.greeting = bytearray()
        self.greeted = False
        self.err_pending = bytearray()
        #: The worker's stderr left a line open: a control line must start on a line of its own.
        self.line_open = False
        for fd in fds:
            os.set_blocking(fd, False)

    def say(self, data: bytes, control: bool = False) -> None:
        """Queue stderr bytes: the worker's as they come, or one control line."""
        if control and self.line_open:
            data = b"\n" + data
        if data:
            self.err_pending += data
            self.line_open = not data.endswith(b"\n")

    def close(self) -> None:
        for fd in {self.inp, self.out, self.err}:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            if isinstance(self.hold, int):
                os.close(self.hold)
            else:
                self.hold.close()


class Keeper:
    def __init__(
        self, worker: subprocess.Popen[bytes], listener: socket.socket, grace: float, hold: int = HOLD
    ) -> None:
        self.worker = worker
        self.listener = listener
        self.grace = grace
        self.hold = hold
        self.att: Attachment | None = None
        self.detached_at = time.monotonic()
        # The worker's stream to the client: out[0] is its byte `base`; `pos` is how far the
        # current attachment was written.
        self.out = bytearray()
        self.base = 0
        self.pos = 0
        self.dropping = False
        self.dropped_head = b""
        self.dropped_body = bytearray()
        self.dropped_lines = 0
        self.out_scanner = Scanner(self._from_worker)
        # The client's stream: `rx` bytes so far; what is not written to the worker yet.
        self.rx = 0
        self.rx_told = 0
        self.told_at = time.monotonic()
        self.to_worker = bytearray()
        self.in_scanner = Scanner(self._from_client)
        self.ending = False  # END read: the worker's stdin closes once `to_worker` is written
        self.worker_out_open = True
        self.worker_err = bytearray()
        self.exit_code: int | None = None

    # -- the worker's stream -------------------------------------------------------------------------

    def _from_worker(self, kind: int, fid: int, piece: Any, first: bool, last: bool) -> None:
        if first:
            self.dropping = kind == LOG and not self.attached and len(self.out) > self.hold
            if self.dropping:
                self.dropped_head, self.dropped_body = bytes(piece), bytearray()
            else:
                self._mark_dropped()
        if self.dropping:
            if not first:
                self.dropped_body += piece
            if last:
                self.dropped_lines += count_lines(self.dropped_head, bytes(self.dropped_body))
                self.dropped_body = bytearray()
            return
        self.out += piece

    def _mark_dropped(self) -> None:
        if self.dropped_lines:
            self.out += dropped_marker(self.dropped_lines, self.hold)
            self.dropped_lines = 0

    def acked(self, upto: int) -> None:
        if self.base < upto <= self.base + len(self.out):
            del self.out[: upto - self.base]
            self.base = upto

    # -- the client's stream -------------------------------------------------------------------------

    def _from_client(self, kind: int, fid: int, piece: Any, first: bool, last: bool) -> None:
        if kind == ACK:
            self.acked(fid)
        elif kind == END:
            self.ending = True
        else:
            self.to_worker += piece

    def _client_data(self, data: bytes) -> None:
        att = self.att
        if att is not None and not att.greeted:
            need = RESUME.size - len(att.greeting)
            att.greeting += data[:need]
            data = data[need:]
            if len(att.greeting) < RESUME.size:
                return
            magic, have = RESUME.unpack(att.greeting)
            if magic != MAGIC or not self.base <= have <= self.base + len(self.out):
                self._say(f"refused:{have}")
                self._flush_err_blocking()
                self.detach()
                return
            att.greeted = True
            self.pos = have
            self._mark_dropped()
            self._say(f"resume:{self.rx}")
        if data:
            self.rx += len(data)
            self.in_scanner.feed(data)

    # -- attachments ---------------------------------------------------------------------------------

    def _say(self, line: str) -> None:
        if self.att is not None:
            self.att.say(f"{MARK}{line}\n".encode(), control=True)

    def attach(self, att: Attachment) -> None:
        self.detach()
        self.att = att
        if self.worker_err:
            att.say(bytes(self.worker_err))
            self.worker_err.clear()

    def detach(self) -> None:
        if self.att is not None:
            self.att.close()
            self.att = None
            self.detached_at = time.monotonic()

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        conn.settimeout(5)
        try:
            _msg, fds, _flags, _addr = socket.recv_fds(conn, 1, 3)
        except OSError:
            conn.close()
            return
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        self.attach(Attachment((fds[0], fds[1], fds[2]), conn))

    # -- the loop ------------------------------------------------------------------------------------

    def run(self) -> int:
        w = self.worker
        assert w.stdin is not None and w.stdout is not None and w.stderr is not None
        win, wout, werr = w.stdin.fileno(), w.stdout.fileno(), w.stderr.fileno()
        for fd in (win, wout, werr):
            os.set_blocking(fd, False)
        err_open = True
        while True:
            if self.exit_code is None and not self.worker_out_open and not err_open:
                self.exit_code = w.wait()
            if self._delivered():
                self._say(f"exit:{self.exit_code}")
                self._flush_err_blocking()
                return 0
            if self.att is None and time.monotonic() - self.detached_at > self.grace:
                return self._end_worker()
            readers, writers = self._interest(win, wout, werr if err_open else -1)
            ready_r, ready_w, _ = select.select(readers, writers, [], TICK)
            if wout in ready_r:
                self._read_worker(wout)
            if err_open and werr in ready_r:
                err_open = self._read_worker_err(werr)
            if win >= 0 and win in ready_w:
                win = self._write_worker(win)
            if self.ending and not self.to_worker and win >= 0:
                w.stdin.close()
                win = -1
            if self.att is not None:
                self._serve_attachment(ready_r, ready_w)
            if self.listener.fileno() in ready_r:
                self._accept()

    def _delivered(self) -> bool:
        """The worker exited and its client has all it wrote."""
        att = self.att
        return self.exit_code is not None and att is not None and att.greeted and self.pos == self._end()

    def _interest(self, win: int, wout: int, werr: int) -> tuple[list[int], list[int]]:
        readers = [self.listener.fileno()]
        writers = []
        # A client that is there paces the worker, as a pipe would; one that is away gets its
        # answers held up to HARD, and output past `hold` dropped.
        if self.worker_out_open and len(self.out) < (self.hold if self.attached else HARD):
            readers.append(wout)
        if werr >= 0:
            readers.append(werr)
        if self.to_worker and win >= 0:
            writers.append(win)
        att = self.att
        if att is not None:
            if len(self.to_worker) < HARD and not (self.ending and att.greeted):
                readers.append(att.inp)
            if att.greeted and self.pos < self._end():
                writers.append(att.out)
            if att.err_pending:
                writers.append(att.err)
        return readers, writers

    @property
    def attached(self) -> bool:
        return self.att is not None and self.att.greeted

    def _end(self) -> int:
        return self.base + len(self.out)

    def _read_worker(self, fd: int) -> None:
        try:
            data = os.read(fd, READ)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.worker_out_open = False
            self._mark_dropped()
            return
        self.out_scanner.feed(data)

    def _read_worker_err(self, fd: int) -> bool:
        try:
            data = os.read(fd, READ)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if self.att is not None:
            self.att.say(data)
        else:
            self.worker_err += data
            del self.worker_err[: max(0, len(self.worker_err) - ERR_TAIL)]
        return bool(data)

    def _write_worker(self, fd: int) -> int:
        try:
            n = os.write(fd, self.to_worker[:READ])
        except BlockingIOError:
            return fd
        except OSError:  # the worker is gone: what it would have read goes nowhere
            self.to_worker.clear()
            return -1
        del self.to_worker[:n]
        return fd

    def _serve_attachment(self, ready_r: list[int], ready_w: list[int]) -> None:
        att = self.att
        assert att is not None
        try:
            if att.inp in ready_r:
                data = os.read(att.inp, READ)
                if not data:
                    raise ConnectionError("the channel's stdin ended")
                self._client_data(data)
            if self.att is not att:
                return
            if att.out in ready_w and att.greeted:
                start = self.pos - self.base
                self.pos += os.write(att.out, memoryview(self.out)[start : start + READ])
            now = time.monotonic()
            if (
                att.greeted
                and self.rx != self.rx_told
                and (self.rx - self.rx_told >= ACK_EVERY or now - self.told_at >= TICK)
            ):
                self._say(f"acked:{self.rx}")
                self.rx_told, self.told_at = self.rx, now
            if att.err in ready_w and att.err_pending:
                del att.err_pending[: os.write(att.err, att.err_pending)]
        except BlockingIOError:
            pass
        except (OSError, ConnectionError):
            self.detach()  # the link dropped: the worker runs on, and its stream is held

    def _flush_err_blocking(self) -> None:
        att = self.att
        if att is None:
            return
        with contextlib.suppress(OSError):
            os.set_blocking(att.err, True)
            os.write(att.err, att.err_pending)
            att.err_pending.clear()

    def _end_worker(self) -> int:
        """Nobody came back within the grace period: end the worker as the guardian would."""
        with contextlib.suppress(OSError):
            self.worker.stdin.close()  # type: ignore[union-attr]
        try:
            self.worker.wait(END_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.worker.pid, signal.SIGKILL)
        return 1


# -- starting, attaching --------------------------------------------------------------------------------


def record_pid(path: str, pid: int) -> None:
    """Write "<pid> <start>" as `skyward.transport.ssh_commands.record_pid` does."""
    start = ""
    with contextlib.suppress(OSError, IndexError), open(f"/proc/{pid}/stat") as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    with open(path, "w") as f:
        f.write(f"{pid} {start}".strip() + "\n")


def _to_devnull() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def start(args: argparse.Namespace) -> int:
    """Fork the keeper off the SSH session and wait here until it lets this channel go."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(args.socket)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mask = os.umask(0o177)  # only this user may connect, from the moment the socket exists
    try:
        listener.bind(args.socket)  # relative to the node folder: a path there may be too long
    finally:
        os.umask(mask)
    listener.listen(4)
    hold_r, hold_w = os.pipe()
    if os.fork():
        os.close(hold_w)
        listener.close()
        _to_devnull()
        with contextlib.suppress(OSError):
            os.read(hold_r, 1)
        return 0
    os.close(hold_r)
    os.setsid()
    record_pid(args.keeper_pid_file, os.getpid())
    worker = subprocess.Popen(
        ["/bin/sh", "-c", args.command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    record_pid(args.pid_file, worker.pid)
    os.write(2, f"{worker.pid}\n".encode())
    fds = (os.dup(0), os.dup(1), os.dup(2))
    _to_devnull()
    keeper = Keeper(worker, listener, args.grace, args.hold)
    keeper.attach(Attachment(fds, hold_w))
    try:
        return keeper.run()
    finally:
        keeper.detach()
        with contextlib.suppress(OSError):
            os.unlink(args.socket)


def attach(args: argparse.Namespace) -> int:
    """Hand this channel's stdin/stdout/stderr to the keeper, and wait until it lets them go."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(args.socket)
        socket.send_fds(conn, [b"."], [0, 1, 2])
    except OSError as exc:
        os.write(2, f"{MARK}gone:{exc}\n".encode())
        return 3
    _to_devnull()
    with contextlib.suppress(OSError):
        conn.recv(1)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skyward._keeper")
    sub = parser.add_subparsers(dest="action", required=True)
    begin = sub.add_parser("start")
    begin.add_argument("--socket", required=True)
    begin.add_argument("--pid-file", required=True)
    begin.add_argument("--keeper-pid-file", required=True)
    begin.add_argument("--grace", type=float, required=True)
    begin.add_argument("--hold", type=int, default=HOLD, help="bytes held for an absent client")
    begin.add_argument("command")
    again = sub.add_parser("attach")
    again.add_argument("--socket", required=True)
    args = parser.parse_args(argv)
    return start(args) if args.action == "start" else attach(args)


if __name__ == "__main__":
    sys.exit(main())
