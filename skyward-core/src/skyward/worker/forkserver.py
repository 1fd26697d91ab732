"""`python -m skyward.worker.forkserver FD`: an interpreter that has already imported the worker, and
forks each of a Local pool's workers from itself.

Why: on a small machine a Local pool's start is CPU-bound. Every fresh worker interpreter spends
about 0.1 s starting Python and its site packages and as much again importing the worker, so four
workers on two cores take about 0.4 s. A fork of an interpreter that did that once takes a few
milliseconds, and the pool pays the start-up once instead of once per node.

`multiprocessing`'s forkserver does not fit: each of its children imports the parent's `__main__`
(the user's script) and runs a pickled `Process`, not a worker on the pipes its node speaks over,
and the server lives as long as the client's interpreter rather than the pool.

The server is single-threaded, so forking it is safe; it refuses to fork once it finds another
thread (one a site hook started). It speaks over the Unix seqpacket socket whose descriptor is its
argument. A request is one message of JSON, `{"env": {...}, "cwd": ...}`: variables to set in the
child (none of which Python reads at start-up) and the folder it starts in. The message carries
three descriptors: the worker's stdin read end, its stdout write end and its reply lane's write
end. The answer is the child's pid, eight bytes, with a pidfd for it, so that the client can wait for
and signal a process that is not its own child without racing a reused pid; a pid of -1 comes
with the reason instead. EOF on the socket (the pool's teardown, or a client that died) ends
the server. The workers it forked live on, each in a session of its own, until their stdin ends,
as workers started any other way do.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import traceback

from skyward.transport import lane
from skyward.transport.fork_protocol import DESCRIPTORS, MAX_REQUEST, PID


def serve(sock: socket.socket) -> None:
    """Import the worker (the point of the server), then fork a worker for each request until
    the client closes the socket."""
    # What every worker imports at its handshake or first task, also once here, so no fork pays
    # for it (7 ms each for these, four workers at once on two cores: a pool's start shows it).
    from skyward.task import instance, output, runtime  # noqa: F401
    from skyward.worker import main as worker_main  # noqa: F401 - imported once, for every fork

    signal.signal(signal.SIGCHLD, _reap)
    while True:
        try:
            message, fds, _flags, _address = socket.recv_fds(sock, MAX_REQUEST, DESCRIPTORS)
        except ConnectionResetError:
            return
        if not message:
            return
        try:
            if len(fds) != DESCRIPTORS:
                raise ValueError(f"a request carries {DESCRIPTORS} descriptors, this one {len(fds)}")
            pid, pidfd = _fork(sock, fds, json.loads(message))
        except Exception as exc:  # noqa: BLE001 - the client reports it and starts the worker itself
            sock.sendall(PID.pack(-1) + repr(exc).encode())
            continue
        finally:
            for fd in fds:
                os.close(fd)  # the child's now: EOF on these pipes must mean the worker is gone
        try:
            socket.send_fds(sock, [PID.pack(pid)], [pidfd])
        finally:
            os.close(pidfd)


def _fork(sock: socket.socket, fds: list[int], request: dict[str, object]) -> tuple[int, int]:
    if threading.active_count() != 1:  # a site hook started one: a fork would copy its locks mid-use
        raise RuntimeError(f"forking is unsafe: the server runs {threading.active_count()} threads")
    # SIGCHLD waits until the pidfd is open: a child that exits at once is not reaped, and its pid
    # not reused, before the pidfd pins it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        pid = os.fork()
        if pid == 0:
            _become_worker(sock, fds, request)  # never returns
        try:
            return pid, os.pidfd_open(pid)
        except OSError:
            os.kill(pid, signal.SIGKILL)
            raise
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def _become_worker(sock: socket.socket, fds: list[int], request: dict[str, object]) -> None:
    """In the child: take the node's pipes and environment, and run the worker as
    `python -m skyward.worker` would."""
    from skyward.worker import main as worker_main

    code = 1
    try:
        sock.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a task's subprocesses are waited for as usual
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.setsid()  # its own session: the pool kills the group, and Ctrl-C does not reach it
        stdin, stdout, reply = fds
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.close(stdin)
        os.close(stdout)
        env = request.get("env") or {}
        assert isinstance(env, dict)
        os.environ.update({str(k): str(v) for k, v in env.items()})
        os.environ[lane.ENV] = str(reply)
        cwd = request.get("cwd")
        if isinstance(cwd, str):
            os.chdir(cwd)
        sys.argv = [os.path.join(os.path.dirname(worker_main.__file__), "__main__.py")]
        worker_main.main()
        code = 0
    except BaseException:  # noqa: BLE001 - the client sees the worker's stdout end instead
        traceback.print_exc()
    finally:
        os._exit(code)


def _reap(signum: int, frame: object) -> None:
    """Collect every exited child, so none lingers as a zombie while the pool runs."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python -m skyward.worker.forkserver FD (started by sky.Local, not by hand)")
    serve(socket.socket(fileno=int(sys.argv[1])))
    os._exit(0)  # nothing to clean up: skip the interpreter's finalisation, which the pool's stop waits for


if __name__ == "__main__":
    main()
