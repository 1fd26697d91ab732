"""`executor="process"`: tasks run in spawned subprocesses, one per slot.

Each slot is a child process fed over a multiprocessing pipe. A slot whose task is cancelled (a
timeout) is killed and replaced, which is how a stuck CPU-bound task is recovered without touching
the rest of the node. With `reuse_processes=False` every task gets a fresh child.

A child that is done with (the worker shuts down, or `reuse_processes=False`) is told so by the
end of its pipe and exits by itself, leaving its `around_process` contexts; only a child that does
not exit within `GRACE` seconds is killed.

A child that ends by itself in the middle of a task (`os._exit`, a segfault, the out-of-memory
killer) fails that task with a `TaskProcessError` saying how it ended, and its slot gets a fresh
child; only a child this worker killed (a cancel, a timeout, shutdown) stands for `TaskCancelled`.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from typing import Any

import cloudpickle

from skyward.collections import bridge
from skyward.errors import TaskProcessError
from skyward.messages import RemoteFailure

#: How long a child may take to leave its `around_process` contexts before it is killed (seconds).
GRACE = 10.0


class TaskCancelled(BaseException):
    """Raised inside a task the client cancelled (timeout or a closed stream)."""


class _Slot:
    def __init__(self, ctx: Any, init_bytes: bytes) -> None:
        parent, child = ctx.Pipe()
        self.conn = parent
        # A pipe of its own for the child's collection requests, served by a thread here (bridge.py).
        shared, shared_child = ctx.Pipe()
        self.task_id = 0  # the task the child runs: who holds what it locks
        self.process = ctx.Process(target=_child_main, args=(child, init_bytes, shared_child), daemon=True)
        self.process.start()
        child.close()
        shared_child.close()
        bridge.serve(shared, lambda: self.task_id)
        #: Set (under the slots' lock) before this worker kills the child on purpose, so the task's
        #: thread can tell a cancel from a child that died by itself.
        self.cancelled = False

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

    def retire(self, grace: float = GRACE) -> None:
        """End the child the way it expects: EOF on its pipe, then a wait; killed only if stuck."""
        self.conn.close()
        self.process.join(timeout=grace)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


class ProcessSlots:
    def __init__(self, size: int, reuse: bool, init_bytes: bytes) -> None:
        import multiprocessing  # here: a worker on the thread executor never needs it (start time)

        self._ctx = multiprocessing.get_context("spawn")
        self._reuse = reuse
        self._init = init_bytes
        self._free: queue.SimpleQueue[_Slot | None] = queue.SimpleQueue()
        for _ in range(size):
            self._free.put(None)
        self._by_task: dict[int, _Slot] = {}
        self._all: set[_Slot] = set()
        self._lock = threading.Lock()
        self._closing = False

    def run(self, task_id: int, call_bytes: bytes) -> tuple[bool, Any]:
        """Run a pickled `(fn_key, fn_bytes, args, kwargs, place)` in a slot (the function's own
        pickle, so the child loads and decorates each function once; `place`, the worker's
        InstanceInfo once a resize changed it, else None); returns (ok, value or RemoteFailure)."""
        slot = self._free.get() or self._start()
        with self._lock:
            self._by_task[task_id] = slot
        slot.task_id = task_id
        healthy = False
        try:
            slot.conn.send_bytes(call_bytes)
            ok, value = cloudpickle.loads(slot.conn.recv_bytes())
            healthy = True
            return ok, value
        except (EOFError, OSError) as exc:
            with self._lock:
                cancelled = slot.cancelled or self._closing
            if cancelled:
                raise TaskCancelled(f"the task's subprocess was stopped ({exc or 'killed'})") from None
            raise _died(slot) from None
        finally:
            with self._lock:
                self._by_task.pop(task_id, None)
            if healthy and self._reuse:
                self._free.put(slot)
            else:
                if healthy:
                    slot.retire()
                else:
                    slot.kill()
                with self._lock:
                    self._all.discard(slot)
                self._free.put(None)

    def cancel(self, task_id: int) -> bool:
        with self._lock:
            slot = self._by_task.get(task_id)
            if slot is None:
                return False
            slot.cancelled = True
        slot.process.kill()
        return True

    def close(self) -> None:
        """Retire every child at once (each leaves its contexts meanwhile), then wait for each."""
        with self._lock:
            self._closing = True  # a task still waiting on its child is stopped, not crashed
            slots = list(self._all)
        for slot in slots:
            slot.conn.close()
        for slot in slots:
            slot.retire()

    def _start(self) -> _Slot:
        slot = _Slot(self._ctx, self._init)
        with self._lock:
            self._all.add(slot)
        return slot


def _died(slot: _Slot) -> TaskProcessError:
    """The error for a task whose child ended by itself: how it ended, and what usually does that.

    The child's end of the pipe closes only when it exits, so it is gone or about to be; it is
    waited for briefly to read its exit status, and killed if it somehow lingers.
    """
    process = slot.process
    process.join(timeout=5)
    if process.is_alive():
        process.kill()
        process.join(timeout=5)
    code = process.exitcode
    where = f'The task\'s subprocess (pid {process.pid}, Worker(executor="process"))'
    if code is not None and code < 0:
        try:
            name = f"{signal.Signals(-code).name} ({-code})"
        except ValueError:
            name = str(-code)
        cause = {
            signal.SIGKILL: "; on Linux that is often the out-of-memory killer (see `dmesg`): give the "
            "task less data at once or the node more memory",
            signal.SIGSEGV: "; that is a crash in native code (a C extension or a library it loads)",
            signal.SIGABRT: "; that is usually a native library aborting after an internal error",
        }.get(-code, "")
        what = f"was killed by signal {name} while running it{cause}"
    elif code is not None:
        what = (
            f"exited with code {code} while running it, without returning a result (os._exit(), or "
            "a C library calling exit())"
        )
    else:
        what = "ended while running it, for a reason it did not report"
    return TaskProcessError(
        f"{where} {what}. The task was not retried; the node goes on serving tasks with a fresh "
        "subprocess.",
        exitcode=code,
    )


def _child_main(conn: Any, init_bytes: bytes, shared: Any = None) -> None:
    from skyward import tracebacks
    from skyward.task import runtime
    from skyward.worker.functions import LoadedFunctions
    from skyward.worker.lifecycle import AppLifecycle, WorkerHooks
    from skyward.worker.memory import return_large_blocks_to_the_system

    return_large_blocks_to_the_system()  # a child started by spawn, not forked from the worker
    env, info, plugins, sys_path, include_sources = cloudpickle.loads(init_bytes)
    bridge.install_child(shared)  # the task's collections reach the store through this worker
    os.environ.update(env)
    sys.path[:0] = [p for p in sys_path if p not in sys.path]
    tracebacks.set_include_sources(os.environ.get("SKYWARD_WORKDIR"), include_sources)
    runtime.set_instance_info(info)
    hooks = WorkerHooks(plugins)
    lifecycle = AppLifecycle(hooks, info, hook="around_process")
    # The functions in the plugins' decorators, by key, within a byte bound (worker/functions.py).
    functions = LoadedFunctions()

    def load(fn_bytes: bytes) -> Any:
        return hooks.decorate(cloudpickle.loads(fn_bytes))

    try:
        while True:
            try:
                data = conn.recv_bytes()
            except (EOFError, OSError):
                return
            try:
                lifecycle.ensure_entered()
                fn_key, fn_bytes, args, kwargs, place = cloudpickle.loads(data)
                if place is not None:  # the pool was resized since this child started
                    runtime.set_instance_info(place)
                call = functions.get(fn_key, fn_bytes, load)
                result = call(*args, **kwargs)
                bridge.before_reply()  # the task's eventual writes reach the store before its result
                reply = (True, result)
            except BaseException as exc:  # noqa: BLE001 - reported to the client
                reply = (False, RemoteFailure.capture(exc))
            sys.stdout.flush()
            sys.stderr.flush()
            try:
                payload = cloudpickle.dumps(reply, protocol=5)
            except Exception as exc:  # noqa: BLE001
                failure = RemoteFailure.capture(_unpicklable_result(reply[1], exc))
                payload = cloudpickle.dumps((False, failure))
            conn.send_bytes(payload)
    finally:
        for error in lifecycle.close():
            print(f"skyward: {error}", file=sys.stderr, flush=True)


def _unpicklable_result(value: Any, exc: BaseException) -> BaseException:
    from skyward.errors import SerializationError

    return SerializationError(
        f"The task's return value ({type(value).__name__}) cannot be pickled: {exc}. "
        "Return plain data (numbers, arrays, dicts) instead."
    )
