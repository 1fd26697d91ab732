"""A worker subprocess on this machine, spoken to over its stdin/stdout pipes.

Reads go straight into the frame decoder's memory (`os.readv`), writes are vectored (`os.writev`)
from the encoded parts without joining them, and both pipes are enlarged so a large payload moves
in few system calls. Frames queued during one loop iteration after its first leave together in
one write.

A second pipe, the reply lane, carries the answer to a lone synchronous call straight to the
caller's thread (`skyward.transport.lane`).

The worker shares this host, so bodies and buffers of `shm.MIN_SIZE` bytes or more travel through
shared memory instead (`skyward.transport.shm`): the channel makes a folder for its segments, tells
the worker through the environment, and removes the folder once the worker is gone.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fcntl
import os
import signal
import subprocess
import threading
from typing import IO, TYPE_CHECKING, Any, Protocol

import structlog

from skyward.transport import lane, shm
from skyward.transport.base import Channel
from skyward.wire import FrameDecoder, Kind, offload, skip_written

if TYPE_CHECKING:
    from skyward.transport.forkserver import ForkServer

F_SETPIPE_SZ = 1031
PIPE_SIZE = 1 << 20


def _enlarge(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)


class WorkerProcess(Protocol):
    """What the channel needs of its worker's process: a `subprocess.Popen`, or a fork of the
    fork server (`skyward.transport.forkserver.ForkedProcess`)."""

    @property
    def pid(self) -> int: ...

    @property
    def stdin(self) -> IO[bytes] | None: ...

    @property
    def stdout(self) -> IO[bytes] | None: ...

    def wait(self, timeout: float | None = None) -> Any: ...

    def kill(self) -> None: ...


class PipeChannel(Channel):
    """`shared_memory`: whether large parts may travel through shared memory (the worker is on this
    host, so they may unless a caller wants the pipe alone; unavailable tmpfs falls back to it)."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        shared_memory: bool = True,
    ) -> None:
        super().__init__()
        self._shared_memory = shared_memory
        self._argv = argv
        self._env = env
        self._cwd = cwd
        self._proc: WorkerProcess | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: collections.deque[memoryview] = collections.deque()
        #: Serialises writes: the loop's, and a caller thread's `send_now`.
        self._write_lock = threading.Lock()
        self._writing = False
        self._flush_scheduled = False
        self._closed = False
        self._decoder = FrameDecoder(lambda frame: self.on_frame(frame), shm=shm.open_segment)
        #: Where this channel's shared-memory segments live, and the writer of the client's.
        self._shm_folder: str | None = None
        self._shm: shm.SegmentWriter | None = None
        #: The reply lane's read end, once the worker has said it writes to it (see `enable_lane`).
        self.lane: lane.ReplyLane | None = None
        self._lane_fd: int | None = None

    def spawn(self) -> None:
        """Start the worker from `argv`, a fresh process."""
        self._loop = asyncio.get_running_loop()
        env = self._worker_env(dict(os.environ if self._env is None else self._env))
        lane_read, lane_write = os.pipe()
        env[lane.ENV] = str(lane_write)
        try:
            proc: WorkerProcess = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                cwd=self._cwd,
                pass_fds=(lane_write,),
                start_new_session=True,  # Ctrl-C in the client's terminal must not kill workers mid-teardown
            )
        except BaseException:
            os.close(lane_read)
            self._remove_shm()
            raise
        finally:
            os.close(lane_write)  # the worker's end only: the lane ends when the worker does
        self._attach(proc, lane_read)

    async def spawn_forked(self, server: ForkServer) -> None:
        """Start the worker as a fork of `server`, whose environment is this channel's `env`
        (`argv` and `cwd` are the server's: the same worker, already imported)."""
        self._loop = asyncio.get_running_loop()
        env = self._worker_env({})
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        lane_read, lane_write = os.pipe()
        try:
            proc = await server.fork((stdin_r, stdout_w, lane_write), env, stdin_w, stdout_r)
        except BaseException:
            for fd in (stdin_w, stdout_r, lane_read):
                os.close(fd)
            self._remove_shm()
            raise
        finally:
            for fd in (stdin_r, stdout_w, lane_write):
                os.close(fd)  # the worker's ends: EOF on them means the worker is gone
        self._attach(proc, lane_read)

    def _worker_env(self, env: dict[str, str]) -> dict[str, str]:
        """`env` plus what the worker learns of this channel: its shared-memory folder."""
        self._shm_folder = shm.create_folder() if self._shared_memory else None
        if self._shm_folder is not None:
            env[shm.ENV] = self._shm_folder
            self._shm = shm.SegmentWriter(self._shm_folder, "c")
        return env

    def _attach(self, proc: WorkerProcess, lane_read: int) -> None:
        self._proc = proc
        self._lane_fd = lane_read
        _enlarge(lane_read)
        assert proc.stdin is not None and proc.stdout is not None
        self._wfd = proc.stdin.fileno()
        self._rfd = proc.stdout.fileno()
        for fd in (self._wfd, self._rfd):
            _enlarge(fd)
            os.set_blocking(fd, False)

    def enable_lane(self) -> lane.ReplyLane | None:
        """The reply lane, once the worker's READY said it has its end (a launcher in between
        may have closed it; then calls go through the main pipe like any task)."""
        if self.lane is None and self._lane_fd is not None and not self._closed:
            self.lane = lane.open_lane(self._lane_fd)
            self._lane_fd = None
        return self.lane

    def _close_lane(self) -> None:
        if self.lane is not None:
            self.lane.close()
        elif self._lane_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lane_fd)
            self._lane_fd = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        assert self._loop is not None
        self._loop.add_reader(self._rfd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            while True:
                buffer = self._decoder.get_buffer()
                size = len(buffer)
                n = os.readv(self._rfd, [buffer])
                del buffer  # release the export: the decoder may grow its stage
                if n == 0:
                    self._lost(None)
                    return
                self._decoder.buffer_updated(n)
                if n < size:
                    return  # drained; the loop calls again when more arrives
        except BlockingIOError:
            return
        except Exception as exc:  # noqa: BLE001 - a broken frame or pipe ends the channel
            structlog.get_logger().warning("skyward.channel_read_failed", error=repr(exc))
            self._lost(exc)

    def send_parts(self, parts: list[Any]) -> None:
        if self._closed:
            return
        if self._shm is not None:
            parts = offload(parts, self._shm.put, shm.MIN_SIZE)
        with self._write_lock:
            self._queue(parts)
            if self._writing or self._flush_scheduled:
                return
            # The first frame of a loop iteration leaves at once (a lone task waits for nothing);
            # the frames queued after it in the same iteration (a scheduler pump placing many
            # tasks) leave together in one vectored write at its end.
            self._flush_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._scheduled_flush)
            self._flush()

    can_send_now = True

    def send_now(self, parts: list[Any]) -> bool:
        """Write frames from any thread, at once (a caller's lone task; see Dispatcher._dispatch_now).

        Frames already waiting for the loop's writer go first: these join their queue. What the
        pipe does not take now is left to the loop's writer.
        """
        if self._closed or self._loop is None:
            return False
        if self._shm is not None:
            parts = offload(parts, self._shm.put, shm.MIN_SIZE)
        with self._write_lock:
            if self._closed:
                return False
            waiting = bool(self._pending)
            if not waiting and len(parts) <= 64:
                # The usual case, nothing queued: one writev of the parts as they are.
                try:
                    written = os.writev(self._wfd, parts)
                except BlockingIOError:
                    written = 0
                except OSError as exc:
                    self._loop.call_soon_threadsafe(self._lost, exc)
                    return False
                parts = skip_written(parts, written)
                if not parts:
                    return True
            self._queue(parts)
            if not waiting and not self._write_pending():
                return False
            if self._pending and not self._flush_scheduled:
                self._flush_scheduled = True
                self._loop.call_soon_threadsafe(self._scheduled_flush)
        return True

    def _queue(self, parts: list[Any]) -> None:
        for part in parts:
            if len(part):
                self._pending.append(memoryview(part).cast("B"))

    def _scheduled_flush(self) -> None:
        with self._write_lock:
            self._flush_scheduled = False
            if not self._closed and not self._writing:
                self._flush()

    def _flush(self) -> None:
        """Write what the pipe takes, and wait for it to drain for the rest (loop thread, lock held)."""
        if not self._write_pending():
            return
        assert self._loop is not None
        if self._pending and not self._writing:
            self._writing = True
            self._loop.add_writer(self._wfd, self._on_writable)
        elif not self._pending and self._writing:
            self._writing = False
            self._loop.remove_writer(self._wfd)

    def _write_pending(self) -> bool:
        """Write queued parts until the pipe is full; False once the pipe broke (lock held)."""
        pending = self._pending
        try:
            while pending:
                written = os.writev(self._wfd, list(_take(pending, 512)))
                while written:
                    head = pending[0]
                    if written >= len(head):
                        written -= len(head)
                        pending.popleft()
                    else:
                        pending[0] = head[written:]
                        written = 0
        except BlockingIOError:
            pass
        except (BrokenPipeError, OSError) as exc:
            pending.clear()
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self._lost, exc)  # the loop's to handle, whoever wrote
            return False
        return True

    def _on_writable(self) -> None:
        with self._write_lock:
            self._flush()

    def _lost(self, exc: BaseException | None) -> None:
        self._detach()  # nothing more to read (also while `close` waits for the worker's last frames)
        if self._closed:
            return
        self._closed = True
        self._remove_shm()  # nothing more is read: segments in flight either way are garbage
        self.on_closed(exc)

    def _detach(self) -> None:
        if self._loop is None or self._proc is None:
            return
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._rfd)
        if self._writing:
            with contextlib.suppress(Exception):
                self._loop.remove_writer(self._wfd)
            self._writing = False

    async def close(self, timeout: float = 5.0) -> None:
        proc = self._proc
        if proc is None:
            return
        if not self._closed:
            with contextlib.suppress(Exception):
                self.send(Kind.SHUTDOWN)
                with self._write_lock:
                    if not self._writing:
                        self._flush()  # now: the descriptor is closed below
        self._closed = True
        # The reader stays until the worker's end of file: what it sends while it leaves its
        # plugins' contexts (their output, a failure) still arrives.
        if self._writing:
            with contextlib.suppress(Exception):
                self._loop.remove_writer(self._wfd)  # type: ignore[union-attr]
            self._writing = False
        with contextlib.suppress(Exception):
            proc.stdin.close()  # type: ignore[union-attr]
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.run_in_executor(None, proc.wait), timeout)
        except (TimeoutError, Exception):
            self.kill()
            await loop.run_in_executor(None, proc.wait)
        self._on_readable()  # the rest, up to the end of file, now that the worker has exited
        self._detach()
        self._remove_shm()
        self._close_lane()
        with contextlib.suppress(Exception):
            proc.stdout.close()  # type: ignore[union-attr]

    def kill(self) -> None:
        if self._proc is None:
            return
        # The worker leads its own session: kill the group so executor subprocesses go with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()

    def reap(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(Exception):
                self._proc.wait(timeout=5)
                self._proc.stdin.close()  # type: ignore[union-attr]
                self._proc.stdout.close()  # type: ignore[union-attr]
        self._remove_shm()
        self._close_lane()

    def _remove_shm(self) -> None:
        """Remove every segment of this channel: those the worker never mapped (killed, or closed
        mid-frame) included. Mappings already made stay valid. Late senders fall back to the pipe."""
        self._shm = None
        if self._shm_folder is not None:
            shm.remove_folder(self._shm_folder)


def _take(pending: collections.deque[memoryview], n: int):
    for i, part in enumerate(pending):
        if i >= n:
            return
        yield part
