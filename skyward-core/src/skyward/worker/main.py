"""`python -m skyward.worker`: one worker process per node, from its start to its exit.

Start-up order matters: the protocol stream is moved off fd 0/1 to private descriptors first, then
fd 1/2 are pointed at capture pipes, so neither a `print` nor a C library can corrupt frames. Then
the handshake (HELLO in, READY out), the ttl watchdog when the client asks for one, SIGTERM's
orderly exit, and the process group taken down at the end. What the worker does between its
handshake and its exit is `worker/serve.py`'s (`Worker`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading
from typing import Any

from skyward.messages import RemoteFailure
from skyward.payload import Undecodable
from skyward.transport import lane
from skyward.wire import Kind
from skyward.worker.capture import OutputPump
from skyward.worker.channel import WorkerChannel
from skyward.worker.memory import return_large_blocks_to_the_system
from skyward.worker.serve import Worker
from skyward.worker.watchdog import CLEANUP_GRACE, Watchdog


def _take_protocol_fds() -> tuple[int, int]:
    """Move the protocol off fd 0/1 so user output can never corrupt a frame."""
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return read_fd, write_fd


def _take_reply_fd() -> int | None:
    """The reply lane's write end, moved to a private descriptor that no subprocess inherits;
    None when the client gave none (SSH) or a launcher in between closed it."""
    name = os.environ.pop(lane.ENV, None)
    if not name:
        return None
    try:
        fd = int(name)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        private = os.dup(fd)  # non-inheritable
        os.close(fd)
        os.write(private, lane.GREETING)  # the client checks it before it trusts the lane
    except (ValueError, OSError):
        return None
    return private


def main() -> None:
    return_large_blocks_to_the_system()
    read_fd, write_fd = _take_protocol_fds()
    channel = WorkerChannel(read_fd, write_fd, _take_reply_fd())
    pump = OutputPump(channel.send)
    pump.capture(1, "stdout")
    pump.capture(2, "stderr")
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    pump.start()
    try:
        from skyward.task import output

        output.install()
    except ImportError:
        pass

    frames = channel.frames()
    first = next(frames, None)
    if first is None or first.kind is not Kind.HELLO:
        return
    try:
        if isinstance(first.payload, Undecodable):
            raise first.payload.explain("The pool's set-up (its plugins, image and options)", "on the worker")
        worker = Worker(channel, pump, first.payload)
    except BaseException as exc:  # noqa: BLE001 - the client reports a failed start
        channel.send(Kind.ERROR, 0, RemoteFailure.capture(exc))
        return
    ready = {"pid": os.getpid(), "python": sys.version.split()[0], "reply_lane": channel.reply_fd is not None}
    channel.send(Kind.READY, 0, ready)
    hello = first.payload
    if getattr(hello, "metrics", ()):
        from skyward.worker import telemetry

        telemetry.start(channel.send, hello.metrics)  # a sampler beside this process (sampler.py)
    if getattr(hello, "ttl", 0) > 0:
        Watchdog(hello.ttl, lambda: channel.last_read, worker.abandon, hello.shutdown_command).start()
    _leave_on_sigterm(worker)
    try:
        worker.serve()
    finally:
        pump.stop()
        _end_process_group()
        os._exit(0)


def _leave_on_sigterm(worker: Worker) -> None:
    """SIGTERM (a node's guardian ending the pool's work, see `skyward.guardian`) stops the tasks
    and leaves the plugins' `around_app` contexts, within `CLEANUP_GRACE`, then ends the worker
    and its process group. The handler only starts a thread: the main thread may be in a task.

    Python runs the handler on the main thread, at its next bytecode, whichever thread the kernel
    handed the signal to: the main thread waits for the channel's end in ticks for that reason
    (`TaskThreads.wait`), so a SIGTERM caught by a reader thread is acted on within a tick.
    """
    def leave() -> None:
        cleanup = threading.Thread(target=worker.abandon, name="skyward-sigterm-cleanup", daemon=True)
        cleanup.start()
        cleanup.join(CLEANUP_GRACE)
        _end_process_group()
        os._exit(0)

    def on_sigterm(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Thread(target=leave, name="skyward-sigterm", daemon=True).start()

    signal.signal(signal.SIGTERM, on_sigterm)


def _end_process_group() -> None:
    """Take every process a task started down with the worker (when the worker leads its group).

    Local and SSH start workers in a session of their own; a task's subprocesses would otherwise
    outlive a worker whose client vanished.
    """
    if os.getpgrp() != os.getpid():
        return
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Off the main thread (SIGTERM's leaving, `_leave_on_sigterm`) its handler ignored SIGTERM already.
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGTERM)
