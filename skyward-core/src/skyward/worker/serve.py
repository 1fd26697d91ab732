"""The worker's service: each frame from the client acted on in arrival order, and the worker's stop.

Task threads take turns reading frames, and a task runs on the thread that read it (`threads.py`),
or in a spawned subprocess it waits for (executor="process"); any thread may write frames through
the channel's lock. `Worker` holds the worker's state and reads the frames (`handle`); running a
task is `worker/running.py`'s (`TaskRunner`), sending its outcome `worker/outcomes.py`'s
(`Outcomes`). The process around it (descriptors, signals) is `worker/main.py`'s.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from typing import Any

import cloudpickle

from skyward import tracebacks
from skyward.collections.transport import ChannelClient
from skyward.collections.transport import install as install_collections
from skyward.errors import PoolClosedError
from skyward.messages import Hello, RemoteFailure, TaskMessage
from skyward.payload import Undecodable
from skyward.wire import Frame, Kind
from skyward.worker.blobs import resolve_task
from skyward.worker.capture import OutputPump
from skyward.worker.channel import WorkerChannel
from skyward.worker.functions import ShippedFunctions
from skyward.worker.lifecycle import AppLifecycle, WorkerHooks
from skyward.worker.outcomes import Outcomes
from skyward.worker.processes import ProcessSlots
from skyward.worker.running import Running, TaskRunner
from skyward.worker.streams import InputStream
from skyward.worker.threads import STOP, Job, TaskThreads


class Worker(TaskRunner, Outcomes):
    """One worker process's state, and the frames from its client acted on (`handle`)."""

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
        self.held: list[Any] = []  # a burst's outcomes, sent together (see `Outcomes.held`)
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
        self.running: dict[int, Running] = {}
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
            state = Running(call=kind is Kind.CALL)
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
            self.running[frame.id] = Running(call=frame.kind is Kind.CALL)
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
