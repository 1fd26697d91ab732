"""`python -m skyward.worker`: one worker process per node.

Start-up order matters: the protocol stream is moved off fd 0/1 to private descriptors first, then
fd 1/2 are pointed at capture pipes, so neither a `print` nor a C library can corrupt frames. Task
threads take turns reading frames, and a task runs on the thread that read it (`threads.py`), or in
a spawned subprocess it waits for (executor="process"); any thread may write frames through the
channel's lock.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import stat
import sys
import threading
from typing import Any

import cloudpickle

from skyward import tracebacks
from skyward.collections.transport import ChannelClient
from skyward.collections.transport import install as install_collections
from skyward.errors import PoolClosedError, SerializationError
from skyward.messages import Hello, RemoteFailure, StreamRef, TaskMessage
from skyward.payload import Undecodable
from skyward.transport import lane
from skyward.wire import Frame, Kind, encode
from skyward.worker.blobs import resolve_task
from skyward.worker.capture import OutputPump
from skyward.worker.channel import WorkerChannel
from skyward.worker.functions import HeldFunction, ShippedFunctions
from skyward.worker.lifecycle import AppLifecycle, WorkerHooks
from skyward.worker.memory import return_large_blocks_to_the_system
from skyward.worker.processes import ProcessSlots, TaskCancelled
from skyward.worker.streams import InputStream, OutputCredits
from skyward.worker.threads import STOP, Job, TaskThreads
from skyward.worker.watchdog import CLEANUP_GRACE, Watchdog


class _Running:
    """A task on this worker. `interruptible` is true only while user code runs (under `lock`), so
    a cancel never lands in Skyward's own code, such as halfway through writing a frame."""

    __slots__ = ("thread_id", "credits", "cancelled", "lock", "interruptible", "call", "writes")

    def __init__(self, call: bool = False) -> None:
        self.thread_id: int | None = None
        self.credits: OutputCredits | None = None
        self.cancelled = False
        self.lock = threading.Lock()
        self.interruptible = False
        #: A CALL: its caller reads the answer on the reply lane.
        self.call = call
        #: The channel's main writes when the task started (see `Worker.answer_call`).
        self.writes = 0


class Worker:
    def __init__(self, channel: WorkerChannel, pump: OutputPump, hello: Hello) -> None:
        from skyward.task import runtime

        self.channel = channel
        self.pump = pump
        self.hello = hello
        os.environ.update(hello.env)
        sys.path[:0] = [p for p in hello.sys_path if p not in sys.path]
        tracebacks.set_include_sources(os.environ.get("SKYWARD_WORKDIR"), hello.include_sources)
        runtime.set_instance_info(hello.info)
        #: This worker's place in the pool: the handshake's, then each INFO's (a resize).
        self.info = hello.info
        self.plugins = tuple(hello.plugins)
        self.hooks = WorkerHooks(self.plugins)
        self.app = AppLifecycle(self.hooks, hello.info)
        self.threads = TaskThreads(hello.concurrency, channel.frames(), self.handle, on_pause=self.flush_held)
        # Outcomes of tasks the reader ran back to back, sent together with the last one whose
        # frames were read in the same read (or when a task runs long, or the reader is about to
        # wait): one write and one client wake-up for a burst of tasks.
        self.held: list[Any] = []
        self.held_lock = threading.Lock()
        channel.on_idle = self.flush_held
        self.slots: ProcessSlots | None = None
        if hello.executor == "process":
            init = cloudpickle.dumps(
                (hello.env, hello.info, self.plugins, hello.sys_path, hello.include_sources)
            )
            self.slots = ProcessSlots(hello.concurrency, hello.reuse_processes, init)
        #: The functions this worker was sent, within the bound its client keeps (functions.py).
        self.functions = ShippedFunctions(keep_bytes=self.slots is not None)
        self.running: dict[int, _Running] = {}
        self.inputs: dict[int, InputStream] = {}
        #: This process's way to the pool's collections (sky.dict, sky.lock...: skyward/collections).
        self.collections = ChannelClient(channel, self.threads.release_reader, self.current_task)
        install_collections(self.collections)

    # -- frame dispatch ---------------------------------------------------------------------------

    def serve(self) -> None:
        self.threads.start().wait()
        self.shutdown()

    def handle(self, frame: Frame) -> Any:
        """Act on one frame, in arrival order; a task is returned for the reading thread to run."""
        kind = frame.kind
        if isinstance(frame.payload, Undecodable):
            return self.undecodable(frame)
        if kind is Kind.FUNCTION:
            self.functions.receive(frame.payload)
        elif kind is Kind.BLOB:
            self.functions.blobs.receive(frame.id, frame.payload)
        elif kind is Kind.TASK or kind is Kind.CALL:
            state = _Running(call=kind is Kind.CALL)
            self.running[frame.id] = state  # now, so a CANCEL read next finds it
            try:
                msg = TaskMessage.from_wire(frame.payload)
                if msg.blobs:
                    msg = resolve_task(msg)
            except LookupError as exc:  # a large argument this worker does not hold (worker/blobs.py)
                return Job(functools.partial(self.refuse, frame.id, exc))
            streams = msg.generator or msg.streams  # the client says so: no scan of the arguments here
            # The function is taken now: a FUNCTION frame read later may drop it from the cache.
            function = self.functions.get(msg.fn_key)
            return Job(
                functools.partial(self.run_task, frame.id, msg, state, streams, function), inline=not streams
            )
        elif kind is Kind.ITEM:
            stream = self.inputs.get(frame.id)
            if stream is not None:
                stream.deliver(frame.payload)
        elif kind is Kind.END:
            stream = self.inputs.pop(frame.id, None)
            if stream is not None:
                stream.finish(frame.payload)
        elif kind is Kind.CREDIT:
            state = self.running.get(frame.id)
            if state is not None and state.credits is not None:
                state.credits.grant(frame.payload)
        elif kind is Kind.CANCEL:
            self.cancel(frame.id)
        elif kind is Kind.PING:
            self.channel.send(Kind.PONG, frame.id, frame.payload)
        elif kind is Kind.INFO:
            from skyward.task import runtime

            self.info = frame.payload
            runtime.set_instance_info(frame.payload)
        elif kind is Kind.CHECK:
            from skyward.worker.health import run_check

            run_check(self.channel.send, frame.id, frame.payload)
        elif kind is Kind.ANSWER:
            self.collections.answer(frame.id, frame.payload)
        elif kind is Kind.SHUTDOWN:
            return STOP
        return None

    def undecodable(self, frame: Frame) -> Job | None:
        """Answer for a frame whose payload would not unpickle here (see `Undecodable`): a task
        fails with the reason, an input stream ends with it; the worker goes on serving."""
        payload: Undecodable = frame.payload
        if frame.kind is Kind.TASK or frame.kind is Kind.CALL:
            self.running[frame.id] = _Running(call=frame.kind is Kind.CALL)
            error = payload.explain("The arguments of a task", "on the worker")
            return Job(functools.partial(self.refuse, frame.id, error))
        if frame.kind is Kind.ANSWER:
            self.collections.answer(frame.id, (False, payload.explain("A collection's value", "here")))
            return None
        if frame.kind is Kind.ITEM or frame.kind is Kind.END:
            stream = self.inputs.pop(frame.id, None)
            if stream is not None:
                stream.finish(payload.explain("An item of an iterator argument", "on the worker"))
            return None
        print(f"skyward: a {frame.kind.name} frame could not be decoded: {payload.error!r}", file=sys.stderr)
        return None

    def current_task(self) -> int:
        """The task the calling thread runs (0 if none): who holds a collection's lock."""
        me = threading.get_ident()
        return next((task_id for task_id, s in list(self.running.items()) if s.thread_id == me), 0)

    def refuse(self, task_id: int, error: BaseException) -> None:
        """Answer a task that cannot run with `error`, by the path its caller listens on."""
        try:
            self.deliver(Kind.ERROR, task_id, RemoteFailure.capture(error))
        finally:
            self.running.pop(task_id, None)

    def cancel(self, task_id: int) -> None:
        state = self.running.get(task_id)
        if state is None:
            return
        state.cancelled = True
        if state.credits is not None:
            state.credits.cancel()
        if self.slots is not None and self.slots.cancel(task_id):
            return
        with state.lock:
            if state.interruptible and state.thread_id is not None:
                # Raises TaskCancelled in the task's thread at its next bytecode; a thread blocked in
                # C code is recovered by the client, which replaces the worker after a grace period.
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(state.thread_id), ctypes.py_object(TaskCancelled)
                )

    # -- task execution ---------------------------------------------------------------------------

    def load_function(self, msg: TaskMessage, function: HeldFunction | None) -> tuple[Any, Any]:
        """The task's function and the same function wrapped in the plugins' decorators.

        Both are kept with the function's entry: unpickling and decorating happen once per
        function per worker, and the decorated wrapper then runs for every task.
        """
        return self.functions.load(self.held_function(msg, function), self.hooks.decorate)

    @staticmethod
    def held_function(msg: TaskMessage, function: HeldFunction | None) -> HeldFunction:
        if function is None:
            raise RuntimeError(f"function {msg.name}() was not shipped to this worker")
        return function

    def resolve_streams(self, values: Any) -> Any:
        if isinstance(values, StreamRef):
            stream = InputStream(values.stream_id, self.channel.send)
            self.inputs[values.stream_id] = stream
            return stream
        return values

    @staticmethod
    def call_user(state: _Running, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run user code with cancellation armed, and only then."""
        with state.lock:
            if state.cancelled:
                raise TaskCancelled("cancelled before it started")
            state.interruptible = True
        try:
            return call(*args, **kwargs)
        finally:
            with state.lock:
                state.interruptible = False

    def run_task(
        self, task_id: int, msg: TaskMessage, state: _Running, streams: bool, function: HeldFunction | None
    ) -> None:
        try:
            self._run_task(task_id, msg, state, streams, function)
        except TaskCancelled:
            pass  # a cancel delivered just as the task finished: its outcome was already sent
        except BaseException as exc:  # noqa: BLE001 - sending the outcome itself failed
            # Say so in the plainest frame there is: a task must never be left unanswered, and a
            # CALL's caller must be told to look for it on the main channel.
            self.channel.send(Kind.ERROR, task_id, RemoteFailure.capture(exc))
            if state.call:
                self.channel.send_reply(encode(Kind.ELSEWHERE, task_id))

    def _run_task(
        self, task_id: int, msg: TaskMessage, state: _Running, streams: bool, function: HeldFunction | None
    ) -> None:
        state.thread_id = threading.get_ident()
        state.writes = self.channel.writes
        try:
            if state.cancelled:
                raise TaskCancelled("cancelled before it started")
            args, kwargs = msg.args, msg.kwargs
            if streams:
                args = tuple(self.resolve_streams(a) for a in args)
                kwargs = {k: self.resolve_streams(v) for k, v in kwargs.items()}
            if self.slots is not None:
                # The child loads and decorates the function itself, once per function.
                self.app.ensure_entered()
                place = self.info if self.info is not self.hello.info else None  # after a resize
                work = (msg.fn_key, self.held_function(msg, function).data, args, kwargs, place)
                ok, value = self.slots.run(task_id, cloudpickle.dumps(work, protocol=5))
                if ok:
                    self.reply(task_id, msg, value)
                else:
                    self.deliver(Kind.ERROR, task_id, value)
                return
            call = self.load_function(msg, function)[1]
            self.app.ensure_entered()
            if msg.generator:
                state.credits = OutputCredits(msg.window)
                self.pump_generator(task_id, msg, call(*args, **kwargs), state.credits)
            else:
                result = self.call_user(state, call, args, kwargs)
                self.reply(task_id, msg, result)
        except BaseException as exc:  # noqa: BLE001 - every failure is reported, never dropped
            self.deliver(Kind.ERROR, task_id, RemoteFailure.capture(exc))
        finally:
            state.thread_id = None
            self.running.pop(task_id, None)

    def reply(self, task_id: int, msg: TaskMessage, result: Any) -> None:
        try:
            self.deliver(Kind.RESULT, task_id, result)
        except Exception as exc:  # noqa: BLE001 - the result could not be pickled
            error = SerializationError(
                f"The return value of {msg.name}() ({type(result).__name__}) cannot be pickled: {exc}. "
                "Return plain data (numbers, arrays, dicts) instead."
            )
            self.deliver(Kind.ERROR, task_id, RemoteFailure.capture(error))

    def deliver(self, kind: Kind, task_id: int, payload: Any) -> None:
        """Send a task's outcome after what it printed; the reader's outcomes may be held a little.

        Encoding happens here, on the task's thread, so a result that cannot be pickled fails
        here. The reader holds an outcome while frames it has read already wait behind it: the
        held outcomes leave with the last task of the burst, or at the next flush (the reader
        about to wait for the client, or running a task longer than a tick). A lone task's
        outcome leaves at once, before the reader's own bookkeeping (~4% of a no-op's round trip
        over SSH, A/B on loopback hosts).
        """
        self.collections.before_outcome(task_id)  # what the task wrote to collections goes first
        parts = self.channel.encode(kind, task_id, payload)
        state = self.running.get(task_id)
        if state is not None and state.call:
            self.answer_call(task_id, parts, state)
            return
        if self.threads.on_reader():
            with self.held_lock:
                self.held.extend(parts)
                if self.channel.more_to_read():
                    return  # a burst: this outcome leaves with the next ones, in one write
                parts, self.held = self.held, []
            # The last of a burst, or a lone task: sent now, before the reader's own bookkeeping
            # (its slot, the next read), which then overlaps the answer's way to the client.
            self.pump.drain()
            self.channel.send_parts(parts)
            return
        self.flush_held()
        self.pump.drain()
        self.channel.send_parts(parts)

    def answer_call(self, task_id: int, parts: list[Any], state: _Running) -> None:
        """A CALL's answer goes to the reply lane, where its caller waits, unless the task wrote
        on the main channel meanwhile (it printed): then the answer follows that output there, and
        the lane says so, so the caller never has a result before the output that came first."""
        self.pump.drain()
        if self.channel.writes == state.writes and self.channel.send_reply(parts):
            return
        self.channel.send_parts(parts)
        self.channel.send_reply(encode(Kind.ELSEWHERE, task_id))

    def flush_held(self) -> None:
        with self.held_lock:
            held, self.held = self.held, []
        if held:
            self.pump.drain()
            self.channel.send_parts(held)

    def pump_generator(self, task_id: int, msg: TaskMessage, gen: Any, credits: OutputCredits) -> None:
        try:
            for item in gen:
                if not credits.take():
                    break
                self.pump.drain()
                try:
                    self.channel.send(Kind.YIELD, task_id, item)
                except Exception as exc:  # noqa: BLE001
                    raise SerializationError(
                        f"An item yielded by {msg.name}() ({type(item).__name__}) cannot be pickled: {exc}"
                    ) from exc
        finally:
            close = getattr(gen, "close", None)
            if close is not None:
                close()
        self.pump.drain()
        self.collections.before_outcome(task_id)
        self.channel.send(Kind.DONE, task_id, credits.cancelled)

    def abandon(self) -> None:
        """The watchdog's cleanup: stop tasks and leave around_app without touching the channel."""
        self.collections.close(PoolClosedError("the worker is stopping: the client is gone"))
        for task_id in list(self.running):
            self.cancel(task_id)
        self.threads.shutdown()
        if self.slots is not None:
            self.slots.close()
        for error in self.app.close():
            print(f"skyward: {error}", file=sys.stderr, flush=True)

    def shutdown(self) -> None:
        """Leave the plugins' contexts; what they print, and any that fails, still reach the
        client, which reads this worker's frames until it exits."""
        self.flush_held()
        self.collections.close(PoolClosedError("the worker is stopping: the pool shut down"))
        for task_id in list(self.running):
            self.cancel(task_id)
        self.threads.shutdown()
        if self.slots is not None:
            self.slots.close()
        errors = self.app.close()
        self.pump.drain()
        for error in errors:
            with contextlib.suppress(OSError):  # the client is gone: nobody to tell
                self.channel.send(Kind.ERROR, 0, RemoteFailure.capture(error))


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
    and its process group. The handler only starts a thread: the main thread may be in a task."""

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
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGTERM)

