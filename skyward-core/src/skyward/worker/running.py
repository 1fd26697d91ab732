"""Running a task on the worker: its function, its arguments' streams, the user's call, its cancel.

Kept apart from the frame handling (`worker/serve.py`) because running user code is where a worker
can be hurt: the function is unpickled and decorated once per function (`load_function`); a cancel
lands in the task's thread only while user code runs (`Running.interruptible`, under its lock), never
halfway through Skyward's own writing of a frame; with `executor="process"` the task runs in a
subprocess slot instead (`worker/processes.py`); and every failure becomes the task's ERROR answer.
`TaskRunner` is a mixin of `Worker`: its methods run on the worker's state, on the task's thread.
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING, Any

import cloudpickle

from skyward.messages import RemoteFailure, StreamRef, TaskMessage
from skyward.wire import Kind, encode
from skyward.worker.processes import TaskCancelled
from skyward.worker.streams import InputStream, OutputCredits

if TYPE_CHECKING:
    from skyward.messages import Hello
    from skyward.task.instance import InstanceInfo
    from skyward.worker.channel import WorkerChannel
    from skyward.worker.functions import HeldFunction, ShippedFunctions
    from skyward.worker.lifecycle import AppLifecycle, WorkerHooks
    from skyward.worker.processes import ProcessSlots


class Running:
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
        #: The channel's main writes when the task started (see `Outcomes.answer_call`).
        self.writes = 0


class TaskRunner:
    """Run tasks and cancel them (the running half of `Worker`)."""

    # The worker's state these methods work on (set in `Worker.__init__`).
    channel: WorkerChannel
    hello: Hello
    info: InstanceInfo
    hooks: WorkerHooks
    app: AppLifecycle
    slots: ProcessSlots | None
    functions: ShippedFunctions
    running: dict[int, Running]
    inputs: dict[int, InputStream]

    if TYPE_CHECKING:  # the worker's way back to the client (worker/outcomes.py)

        def reply(self, task_id: int, msg: TaskMessage, result: Any) -> None: ...
        def deliver(self, kind: Kind, task_id: int, payload: Any) -> None: ...
        def pump_generator(
            self, task_id: int, msg: TaskMessage, gen: Any, credits: OutputCredits
        ) -> None: ...

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
    def call_user(state: Running, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
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
        self, task_id: int, msg: TaskMessage, state: Running, streams: bool, function: HeldFunction | None
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
        self, task_id: int, msg: TaskMessage, state: Running, streams: bool, function: HeldFunction | None
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
