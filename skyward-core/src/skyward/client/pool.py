"""`Pool`: the synchronous facade over one pool's nodes (`sky.Compute`, `sky.ComputePool`).

The user's thread prepares tasks (pickling happens here, so a bad argument fails before dispatch)
and waits on futures; the loop thread owns nodes, scheduling, timeouts and recovery.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import signal
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

import attrs
import structlog

from skyward import registry
from skyward.client import active
from skyward.client.autoscaler import Autoscaler, Load
from skyward.client.loop import LoopThread
from skyward.client.node import NodeHandle
from skyward.client.scheduler import Scheduler
from skyward.client.shipping import ship
from skyward.client.spend import Spend
from skyward.client.tasks import RemoteGenerator, TaskState, Waiter
from skyward.errors import ConfigurationError, NodeLostError, PoolClosedError, SerializationError
from skyward.events import (
    ClusterDestroyed,
    ClusterProvisioned,
    ClusterReady,
    ClusterRequested,
    Error,
    Event,
    EventBus,
    InstanceBootstrapped,
    InstanceDestroyed,
    InstanceProvisioned,
    InstanceReplaced,
    NodeLost,
    PoolResized,
    NodeReady,
    TaskRetried,
    TaskStarted,
)
from skyward.function import (
    PendingFunction,
    PendingFunctionGroup,
    check_timeout,
    not_a_call,
    stream_arguments,
    unwrap_function,
)
from skyward.hooks import PoolHooks
from skyward.image import env_secrets
from skyward.instance import InstanceInfo, PeerInfo
from skyward.logging import register_secret
from skyward.messages import Hello, StreamRef, TaskMessage
from skyward.plugin import LaunchCommand
from skyward.providers.base import NodeSetup
from skyward.tracebacks import include_sources
from skyward.wire import Kind, check_picklable, encode, is_plain
from skyward.worker.lifecycle import enter_worker_contexts

#: Task timeouts at least this long (the default is 300 s) are enforced by one sweep a second
#: over the tasks in flight, not by a timer per task: a second late on a limit of minutes does not
#: matter, while arming and cancelling a timer for each task of a `map` costs it about a tenth of
#: its throughput. Shorter limits get their own timer and fire on time.
COARSE_TIMEOUT = 60.0
SWEEP_INTERVAL = 1.0
#: After a timed-out task is cancelled, how long its slot may stay busy before the worker is replaced.
STUCK_GRACE = 2.0
#: Items a generator task may run ahead of its consumer.
STREAM_WINDOW = 16
HANDSHAKE_TIMEOUT = 60.0


class Pool:
    """A pool of nodes; a context manager that provisions on enter and tears down on exit."""

    def __init__(self, *specs: Any, name: str | None = None, options: Any = None, **kwargs: Any) -> None:
        from skyward.resolve import resolve_compute_args

        on_event = kwargs.pop("on_event", None)
        self.specs, self.options = resolve_compute_args(*specs, name=name, options=options, **kwargs)
        self.name = name or f"pool-{uuid.uuid4().hex[:8]}"
        self.bus = EventBus()
        if on_event is not None:
            self.bus.on(Event, on_event)
        self.worker = self.options.worker_config
        self.executor = self.worker.resolved_executor
        self._loop_thread: LoopThread | None = None
        self._owns_loop = True
        self._scheduler = Scheduler(self._on_dispatch)
        self._sweeper: asyncio.TimerHandle | None = None
        #: Elastic pools only (`nodes=(2, 8)`): sizes the pool to its load every tick.
        self._autoscaler: Autoscaler | None = None
        self._autoscale_timer: asyncio.TimerHandle | None = None
        self._scaling: asyncio.Task[None] | None = None
        #: One size change at a time: `pool.resize` and the autoscaler both take it.
        self._resize_lock = asyncio.Lock()
        self._state = "new"
        self._closing = False
        self._token: Any = None
        self._client_stack = contextlib.ExitStack()
        self._previous_sigterm: Any = None
        self._log = structlog.get_logger()
        self.spec: Any = None
        self.cluster: Any = None
        self.image: Any = None
        self._provider: Any = None
        self._instances: dict[int, Any] = {}
        self._spend = Spend()
        self._requested_at = time.monotonic()
        self._replacing: set[int] = set()
        #: Why the last node that could not be replaced was given up, for tasks that then cannot run.
        self._lost_reason = ""
        #: Credentials in the image's environment (`env_secrets`), masked wherever output is shown.
        self._secrets: tuple[str, ...] = ()
        self._console: Any = None
        self.hooks = PoolHooks(())
        self.bootstrap_ops: tuple[Any, ...] = ()
        self._worker_plugins: tuple[Any, ...] = ()
        self.workers_per_node = 1
        #: The workers' plugin contexts are still to be entered everywhere (`_enter_contexts_everywhere`).
        self._contexts_pending = False
        self._contexts_lock = threading.Lock()

    # -- public: events ----------------------------------------------------------------------------------

    def on(self, event_type: type[Any], handler: Callable[[Any], None]) -> Callable[[], None]:
        """Call `handler` for every event of `event_type` (subclasses included)."""
        return self.bus.on(event_type, handler)

    # -- public: lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> Pool:
        self.start()
        self._token = active.push(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        active.pop(self, self._token)
        self._token = None
        self.stop(reason="error" if exc_type is not None else "")

    def start(self, loop: LoopThread | None = None) -> Pool:
        if self._state != "new":
            raise PoolClosedError(f"{self.name} was already started; create a new sky.Compute(...) for a new pool")
        self._state = "starting"
        self._setup_observability()
        registry.providers()  # entry points are discovered at pool start (cached per process)
        if loop is not None:
            self._loop_thread, self._owns_loop = loop, False
        else:
            self._loop_thread = LoopThread(f"skyward-{self.name}")
        self._install_sigterm()
        try:
            self._loop_thread.run(self._start())
            self._state = "running"
            self.hooks.enter_clients(self._client_stack, self, self.cluster)
        except BaseException:
            self.stop(reason="start failed")
            raise
        return self

    def stop(self, reason: str = "") -> None:
        if self._state in ("stopped", "new"):
            self._state = "stopped"
            return
        self._state = "stopping"
        try:
            self._client_stack.close()
        finally:
            try:
                if self._loop_thread is not None and not self._loop_thread.loop.is_closed():
                    self._loop_thread.run(self._stop(reason), timeout=self.options.shutdown_timeout + 30)
            finally:
                if self._owns_loop and self._loop_thread is not None:
                    self._loop_thread.stop()
                self._restore_sigterm()
                if self._console is not None:
                    self._console.close()
                self._state = "stopped"

    # -- public: dispatch --------------------------------------------------------------------------------

    def run(self, pending: PendingFunction[Any], *, target: int | str | None = None) -> Any:
        """Run on one node (round-robin, or `target="head"` / a node index) and return the result.

        A generator function returns an iterator over its items as the worker yields them.
        """
        task = self._prepare(pending, target, waiter=Waiter())
        stream = None
        if task.generator:
            task.collected = None  # items flow to the caller's iterator instead of a list
            stream = RemoteGenerator(
                task, lambda n: self._call(self._grant, task, n), lambda: self._call(self._cancel, task)
            )
        self._submit([task], call=stream is None)
        if stream is not None:
            return stream
        return self._wait(task)

    def run_async(self, pending: PendingFunction[Any], *, target: int | str | None = None) -> concurrent.futures.Future[Any]:
        task = self._prepare(pending, target)
        self._submit([task], blocking=False)
        assert task.future is not None
        # A caller that cancels its Future cancels the task: dropped if still queued, else told to stop.
        task.future.add_done_callback(
            lambda future: self._call(self._cancel, task) if future.cancelled() else None
        )
        return task.future

    def broadcast(self, pending: PendingFunction[Any]) -> list[Any]:
        """Run once on every worker (one per node unless a plugin such as mig asks for more);
        results in global worker order, which is node order (a generator's items as a list)."""
        self._require_running()  # a closed pool has no nodes: say so rather than return []
        keys = self._worker_keys()
        if len(keys) > 1:
            _refuse_one_shot_iterators(pending)
        cache: dict[int, tuple[bytes, bytes, bool]] = {}
        waiter = Waiter()
        tasks = [self._prepare(pending, None, fn_cache=cache, key=key, waiter=waiter) for key in keys]
        self._submit(tasks)
        return [self._wait(t) for t in tasks]

    def run_parallel(self, group: PendingFunctionGroup) -> Any:
        cache: dict[int, tuple[bytes, bytes, bool]] = {}
        # Streaming in completion order needs a Future per task (as_completed); the rest share a Waiter.
        waiter = None if group.stream and not group.ordered else Waiter()
        tasks = [self._prepare(p, None, fn_cache=cache, waiter=waiter) for p in group.items]
        self._submit(tasks)
        if group.stream:
            return self._stream_results(tasks, group.ordered)
        return tuple(self._wait(t) for t in tasks)

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        """One task per item (fn need not be decorated); results in input order."""
        self._require_running()
        raw = unwrap_function(fn)
        name = PendingFunction(raw).name
        timeout = check_timeout(getattr(fn, "timeout", None))
        if timeout is None:
            timeout = self.options.default_compute_timeout
        shipped = self._ship(raw, name, None)
        waiter = Waiter()
        tasks = [self._task(raw, name, shipped, (item,), {}, None, timeout, waiter) for item in items]
        for task in tasks:
            task.prefetch = True  # a map's short tasks may queue on a busy node (see client/node.py)
        waiter.expect(len(tasks))
        self._submit(tasks)
        waiter.wait_all()
        return [self._wait(t) for t in tasks]

    def current_nodes(self) -> int:
        """How many nodes are ready right now."""
        return len({n.index for n in self._scheduler.nodes.values() if n.ready})

    def resize(self, nodes: int | Any) -> None:
        """Grow or shrink the pool to `nodes` at runtime (the highest node indices go first).

        Every worker learns its new place before its next task: `sky.instance_info()` gives the
        new `total_nodes` and `peers`, so `sky.shard` splits across all the nodes there are now.
        Plugins that formed a distributed group at worker start (torch, jax) keep the group they
        formed; start a new pool to train at a new size. A task pinned to a node that leaves (a
        broadcast's share, `target=`) fails with `NodeLostError`; the others run elsewhere.
        """
        from skyward.spec import normalize_nodes

        desired = normalize_nodes(nodes).desired
        self._require_running()
        assert self._loop_thread is not None
        self._loop_thread.run(self._resize(desired))

    # -- preparing tasks (user thread) ---------------------------------------------------------------------

    def _prepare(
        self,
        pending: PendingFunction[Any],
        target: int | str | None,
        fn_cache: dict[int, tuple[bytes, bytes, bool]] | None = None,
        key: int | None = None,
        waiter: Waiter | None = None,
    ) -> TaskState:
        if not isinstance(pending, PendingFunction):
            raise TypeError(
                f"Pools run pending calls, not {type(pending).__name__}: decorate the function with "
                "@sky.function and call it, e.g. `train(data) >> pool`."
            )
        self._require_running()
        fn = unwrap_function(pending.fn)
        name = pending.name
        shipped = self._ship(fn, name, fn_cache)
        timeout = pending.timeout if pending.timeout is not None else self.options.default_compute_timeout
        target_key = key if key is not None else self._target_index(target)
        return self._task(fn, name, shipped, pending.args, pending.kwargs, target_key, timeout, waiter)

    def _ship(self, fn: Any, name: str, fn_cache: dict[int, tuple[bytes, bytes, bool]] | None) -> tuple[bytes, bytes, bool]:
        """The function's (key, bytes, is-generator), once per function and dispatch call."""
        cached = fn_cache.get(id(fn)) if fn_cache is not None else None
        if cached is None:
            shipped = ship(fn, name)
            if shipped.generator and self.executor == "process":
                raise ConfigurationError(
                    f"{name}() is a generator, and streaming needs the thread executor: use "
                    "sky.Worker(executor='thread') or return a list."
                )
            cached = (shipped.key, shipped.data, shipped.generator)
            if fn_cache is not None:
                fn_cache[id(fn)] = cached
        return cached

    def _task(
        self,
        fn: Any,
        name: str,
        shipped: tuple[bytes, bytes, bool],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        target: int | None,
        timeout: float | None,
        waiter: Waiter | None,
    ) -> TaskState:
        """One task, its frame encoded here on the caller's thread (errors name the argument)."""
        fn_key, fn_bytes, generator = shipped
        plain = is_plain((args, kwargs))  # plain data holds no iterator to stream
        args, kwargs, inputs = self._streams(fn, args, kwargs, plain)
        task_id = TaskState.next_id()
        message = TaskMessage.wire(fn_key, args, kwargs, name, generator, STREAM_WINDOW, bool(inputs))
        try:
            # With plain arguments the standard pickler will do.
            parts = encode(Kind.TASK, task_id, message, plain=plain)
        except Exception as exc:  # noqa: BLE001 - name the culprit
            for i, arg in enumerate(args):
                check_picklable(f"Argument {i} of {name}()", arg)
            for key, value in kwargs.items():
                check_picklable(f"Argument {key}= of {name}()", value)
            raise SerializationError(f"The call {name}(...) cannot be pickled: {exc}") from exc
        return TaskState(
            name=name, fn_key=fn_key, fn_bytes=fn_bytes, parts=parts, task_id=task_id, target=target,
            timeout=timeout, generator=generator, window=STREAM_WINDOW, inputs=inputs, waiter=waiter,
        )

    @staticmethod
    def _streams(
        fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], plain: bool = False
    ) -> tuple[tuple[Any, ...], dict[str, Any], dict[int, Iterator[Any]]]:
        marked = stream_arguments(fn, args, kwargs, values=not plain)
        if not marked:
            return args, kwargs, {}
        inputs: dict[int, Iterator[Any]] = {}

        def as_stream(value: Any) -> StreamRef:
            ref = StreamRef(TaskState.next_id())
            inputs[ref.stream_id] = iter(value)
            return ref

        new_args = tuple(as_stream(a) if i in marked else a for i, a in enumerate(args))
        new_kwargs = {k: as_stream(v) if k in marked else v for k, v in kwargs.items()}
        return new_args, new_kwargs, inputs

    def _target_index(self, target: int | str | None) -> int | None:
        """The scheduler key for `target=`: a node index names that node's first worker."""
        if target is None:
            return None
        if target == "head":
            return 0
        if isinstance(target, int) and not isinstance(target, bool):
            known = self._node_indices()
            if target not in known and target not in self._instances:
                raise ConfigurationError(f"target={target}: this pool has nodes {known}; pass one of them or 'head'")
            return target * self.workers_per_node
        raise ConfigurationError(f"target={target!r}: use None (round-robin), 'head' or a node index")

    def _node_indices(self) -> list[int]:
        return sorted(self._instances)

    def _worker_keys(self) -> list[int]:
        per = self.workers_per_node
        return [node * per + worker for node in self._node_indices() for worker in range(per)]

    def _require_running(self) -> None:
        if self._state != "running":
            raise PoolClosedError(
                f"{self.name} is {self._state}: dispatch inside its `with sky.Compute(...) as pool:` block"
            )

    def _submit(self, tasks: list[TaskState], call: bool = False, blocking: bool = True) -> None:
        """Send `tasks`; `call`: this thread waits for the lone task's answer next. `blocking`:
        the caller waits for the outcomes, which the pool's own loop thread must never do."""
        if blocking and self._loop_thread is not None and self._loop_thread.is_current():
            names = ", ".join(dict.fromkeys(f"{t.name}()" for t in tasks))
            raise RuntimeError(
                f"{names} was dispatched and waited for on {self.name}'s own event loop (an event handler "
                "or a hook runs there), which would wait for ever. Dispatch with `>` (pool.run_async) "
                "and do not wait for the future there, or hand the work to another thread."
            )
        if self._contexts_pending:
            self._enter_contexts_everywhere(tasks)
        if len(tasks) == 1 and self._dispatch_now(tasks[0], call):
            return
        self._call(self._submit_on_loop, tasks)

    def _enter_contexts_everywhere(self, tasks: list[TaskState]) -> None:
        """With the pool's first tasks, send every worker they do not target a task that does nothing.

        A worker enters its plugins' `around_app` contexts before its first task. Some of them are
        collectives: torch's `init_process_group` and `jax.distributed.initialize` block until every
        worker has arrived. A first task sent to one node (`>>`) would wait there for workers that
        had no task, until the rendezvous timed out. The empty tasks bring every worker in at once,
        so the first task may go anywhere; a broadcast targets every worker already and adds none.
        """
        with self._contexts_lock:
            if not self._contexts_pending:
                return
            self._contexts_pending = False
        keys = self._worker_keys()
        targeted = {task.target for task in tasks}
        untargeted = [key for key in keys if key not in targeted]
        if len(keys) < 2 or not untargeted:
            return  # a lone worker's first task enters its contexts itself, as does a broadcast's
        name = enter_worker_contexts.__name__
        shipped = self._ship(enter_worker_contexts, name, None)
        empty = [self._task(enter_worker_contexts, name, shipped, (), {}, k, None, None) for k in untargeted]
        for task in empty:
            assert task.future is not None
            task.future.add_done_callback(self._contexts_entered)
        self._call(self._submit_on_loop, empty)

    def _contexts_entered(self, future: concurrent.futures.Future[Any]) -> None:
        """Log a worker that failed to enter its contexts: that worker's next task fails with the
        same error and reaches its caller, so nothing is lost by not raising it here."""
        error = future.exception()
        if error is not None and not isinstance(error, PoolClosedError | NodeLostError):
            self._log.warning("skyward.worker_contexts_failed", pool=self.name, error=str(error))

    def _dispatch_now(self, task: TaskState, call: bool = False) -> bool:
        """Write a lone task from the caller's thread straight to an idle node's pipe.

        The hop to the loop thread (a wake-up and a GIL hand-off, before anything is sent) was the
        largest share of a short task's round trip on the client. The frame leaves first; the loop
        is told afterwards, and registers the task while the worker runs it. An answer that comes
        before that finds the task in the node's `sent_now`. If the node was lost meanwhile, the
        loop queues the task again, like any task of a lost node. Streaming tasks, busy pools and
        transports that belong to their loop (SSH) go through the loop as before.

        `call` (a caller about to wait for this answer, on a node with a reply lane): the task
        goes as a CALL and this thread reads its answer from the lane (`_await_call`), so the
        loop is not woken at all, neither to register the task nor to read the answer.
        """
        loop_thread = self._loop_thread
        if task.generator or task.inputs or loop_thread is None or loop_thread.is_current():
            return False
        node = self._scheduler.idle_node(task)
        if node is None:
            return False
        lane = node.lane if call else None
        if lane is not None and not lane.try_acquire():
            lane = None  # another thread's call holds it
        # Before the write, so TaskStarted always precedes the TaskCompleted the loop emits for the
        # answer (events reach handlers on the thread that emits them).
        self._announce(task, node)
        if not node.send_now(task, call=lane is not None):
            if lane is not None:
                lane.release()
            return False  # the node is closing: the loop places the task elsewhere
        if lane is None:
            loop_thread.call(self._sent_now, task, node)
        else:
            self._await_call(task, node, lane)
        return True

    def _await_call(self, task: TaskState, node: NodeHandle, lane: Any) -> None:
        """Read a CALL's answer from the node's reply lane on this thread, and resolve the task.

        The task stays in the node's `sent_now` meanwhile, which keeps its slot taken. Should
        this thread stop reading first (the time limit passed, an interrupt, the lane ended with
        its worker), the loop takes the task and the lane over (`_adopt_call`).
        """
        try:
            frame = lane.read(task.timeout)
        except BaseException:
            self._hand_over(task, node)
            raise
        if frame is None:
            self._hand_over(task, node)
            return
        lane.release()
        if frame.kind is Kind.ELSEWHERE:
            return  # the answer follows the task's output on the main channel, to the loop
        if node.finish_call(task, frame) and self._scheduler.waiting:
            self._call(self._scheduler.pump)  # tasks queued while this one held the node

    def _hand_over(self, task: TaskState, node: NodeHandle) -> None:
        try:
            self._loop_thread.call(self._adopt_call, task, node)  # type: ignore[union-attr]
        except RuntimeError:  # the loop is closed: the pool stopped
            task.fail(PoolClosedError(f"{task.name}() was interrupted: {self.name} shut down"))

    def _adopt_call(self, task: TaskState, node: NodeHandle) -> None:
        """The loop's side of a CALL whose caller stopped reading: register it like any task
        written from a caller's thread, and read the rest of the lane until its answer."""
        self._sent_now(task, node)
        node.read_lane_until(task.id)

    def _sent_now(self, task: TaskState, node: NodeHandle) -> None:
        """The loop's half of `_dispatch_now`: count the task in flight, or queue it again."""
        if not node.register_sent(task):
            return  # already answered, or taken back by the node's loss
        if self._closing:
            task.fail(PoolClosedError(f"{task.name}() was interrupted: {self.name} is shutting down"))
            return
        if node.lost or self._scheduler.nodes.get(node.key) is not node:
            # Lost before the loop heard of the task: the same retry policy as its other tasks.
            node.inflight.pop(task.id, None)
            self._retry_or_fail(task, node)
            self._scheduler.pump()
            return
        self._scheduler.placed(task)
        self._arm_timeout(task)

    def _call(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._loop_thread is not None and not self._loop_thread.loop.is_closed():
            self._loop_thread.call(fn, *args)

    @staticmethod
    def _wait(task: TaskState) -> Any:
        return task.result()

    def _stream_results(self, tasks: list[TaskState], ordered: bool) -> Iterator[Any]:
        if ordered:
            for task in tasks:
                yield self._wait(task)
        else:
            for future in concurrent.futures.as_completed([t.future for t in tasks if t.future is not None]):
                yield future.result()

    # -- the loop side -----------------------------------------------------------------------------------

    def _submit_on_loop(self, tasks: list[TaskState]) -> None:
        for task in tasks:
            if self._closing:
                task.fail(PoolClosedError(f"{task.name}() was not run: {self.name} is shutting down"))
            else:
                self._scheduler.enqueue(task)
        self._fail_if_no_node_left()
        self._scheduler.pump()

    def _on_dispatch(self, task: TaskState, node: NodeHandle) -> None:
        self._announce(task, node)
        self._arm_timeout(task)

    def _announce(self, task: TaskState, node: NodeHandle) -> None:
        if self.bus.listens(TaskStarted):  # once per task: build the event only for a listener
            self.bus.emit(TaskStarted(task_id=task.id, name=task.name, node=node.index, pool=self.name))

    def _arm_timeout(self, task: TaskState) -> None:
        """The task's time limit, counted from its dispatch (loop thread)."""
        if task.timeout is not None and task.timer is None:
            loop = asyncio.get_running_loop()
            if task.timeout < COARSE_TIMEOUT:
                left = task.started_at + task.timeout - loop.time()  # a CALL handed over may have waited
                task.timer = loop.call_later(max(0.0, left), self._timed_out, task)
            elif self._sweeper is None:
                self._sweeper = loop.call_later(SWEEP_INTERVAL, self._sweep)

    def _sweep(self) -> None:
        """Time out the in-flight tasks with a long limit that have run past it (see COARSE_TIMEOUT)."""
        self._sweeper = None
        now = asyncio.get_running_loop().time()
        waiting = False
        for node in list(self._scheduler.nodes.values()):
            for task in list(node.inflight.values()):
                if task.timeout is None or task.timeout < COARSE_TIMEOUT:
                    continue
                if now - task.started_at >= task.timeout:
                    self._timed_out(task)
                else:
                    waiting = True
        if waiting and not self._closing:
            self._sweeper = asyncio.get_running_loop().call_later(SWEEP_INTERVAL, self._sweep)

    def _grant(self, task: TaskState, count: int) -> None:
        if task.node is not None and not task.done:
            task.node.channel.send(Kind.CREDIT, task.id, count)

    def _cancel(self, task: TaskState) -> None:
        if task.done:
            return
        if task.node is not None and task.id in task.node.inflight:
            task.node.cancel(task.id)
        else:
            task.resolve(None)

    def _timed_out(self, task: TaskState) -> None:
        task.timer = None
        if task.done:
            return
        node = task.node
        where = f" on node {node.index}" if node is not None else ""
        task.fail(
            TimeoutError(
                f"{task.name}() did not finish within {task.timeout:g}s{where} and was cancelled; raise the "
                "limit with @sky.function(timeout=...), pending.with_timeout(s) or "
                "sky.Options(default_compute_timeout=...)"
            )
        )
        if node is not None and task.id in node.inflight:
            del node.inflight[task.id]
            node.stuck.add(task.id)
            node.cancel(task.id)
            why = (
                f"task {task.name}#{task.id} ran past its {task.timeout:g}s timeout "
                "and did not stop when cancelled"
            )
            asyncio.get_running_loop().call_later(STUCK_GRACE, self._check_stuck, node, task.id, why)

    def _check_stuck(self, node: NodeHandle, task_id: int, why: str) -> None:
        """A timed-out task still running after its cancel and `STUCK_GRACE` (blocked in C code,
        which no cancel reaches) is ended with its worker process, the only way to stop a thread.

        Tasks beside it on the same worker (`Worker(concurrency>1)`) are healthy: the worker is
        drained first, taking no new task while they finish, and replaced once they have, so none
        of them is killed halfway and run again. Checked again every `STUCK_GRACE` until then; a
        stuck task that ends after all lifts the drain.
        """
        if node.lost or self._closing:
            return
        if task_id not in node.stuck:
            if node.draining and not node.stuck:
                node.draining = False
                self._scheduler.pump()
            return
        if node.inflight or node.sent_now:
            if not node.draining:
                self._log.info("skyward.draining_stuck_worker", node=node.index, task=task_id)
                node.draining = True
            asyncio.get_running_loop().call_later(STUCK_GRACE, self._check_stuck, node, task_id, why)
            return
        self._log.info("skyward.replacing_stuck_worker", node=node.index, task=task_id)
        node.lost = True
        node.ready = False
        node.channel.kill()
        self._on_node_lost(node, None, restart=f"{why}, so its worker process is restarted")

    def _on_node_lost(self, node: NodeHandle, exc: BaseException | None, restart: str = "") -> None:
        """`node`'s worker is gone: it ended (`exc` says how), or the pool stopped it to start it
        again (`restart` says why, in words for the user: see `NodeLost.restart`)."""
        if self._closing:
            return
        node.flush_logs()
        if self._scheduler.nodes.get(node.key) is node:
            del self._scheduler.nodes[node.key]
        reason = restart or (repr(exc) if exc else "worker exited")
        self.bus.emit(NodeLost(node=node.index, reason=reason, restart=bool(restart), pool=self.name))
        for task in list(node.inflight.values()):
            self._retry_or_fail(task, node)
        node.inflight.clear()
        node.stuck.clear()
        asyncio.get_running_loop().create_task(self._replace(node))

    def _retry_or_fail(self, task: TaskState, node: NodeHandle) -> None:
        """A task of a lost node: queued again while it may be replayed and has retries left."""
        if task.retryable and task.attempts < self.options.retry_on_interruption:
            task.attempts += 1
            task.node = None
            self.bus.emit(TaskRetried(task_id=task.id, name=task.name, node=node.index, attempt=task.attempts,
                                      reason="node lost", pool=self.name))
            self._scheduler.requeue(task)
        else:
            why = "it streams data, so it cannot be replayed" if not task.retryable else f"after {task.attempts} retries"
            task.fail(NodeLostError(
                f"Node {node.index} was lost while running {task.name}() (task {task.id}); not retried: {why}. "
                "Raise sky.Options(retry_on_interruption=...) to allow more retries."
            ))

    async def _replace(self, old: NodeHandle) -> None:
        index, key = old.index, old.key
        if key in self._replacing:
            return
        self._replacing.add(key)
        try:
            await old.channel.close(timeout=1)
            instance = self._instances[index]
            node = await self._start_node(index, instance, len(self._instances), worker=old.info.worker)
            self.bus.emit(InstanceReplaced(node=index, old_id=instance.id, new_id=instance.id, pool=self.name))
            del node
        except Exception as exc:  # noqa: BLE001 - report, and fail what waited for this node
            self._lost_reason = f"node {index} could not be replaced: {exc}"
            self.bus.emit(Error(message=self._lost_reason, fatal=False, node=index, pool=self.name))
            # The node is gone for good: later broadcasts and targets must not wait for it.
            others = [n for n in self._scheduler.nodes.values() if n.index == index and n.key != key]
            lost = self._instances.pop(index, None) if not others else None
            if lost is not None and self._provider is not None:
                await self._terminate([lost])
            self._fail_pinned({key}, index, f"was lost and could not be replaced: {exc}")
        finally:
            self._replacing.discard(key)
            self._fail_if_no_node_left()  # nothing to do while a node is left
            self._scheduler.pump()

    def _fail_if_no_node_left(self) -> None:
        """Fail every queued task once no node is left and none is being replaced: nothing could
        ever run them, and a caller would wait for ever (loop thread)."""
        why = self._lost_reason or "every node was lost"
        if self._closing or self._scheduler.nodes or self._replacing or self._instances:
            return
        for task in self._scheduler.drain():
            task.fail(NodeLostError(
                f"{task.name}() cannot run: no node of {self.name} is left ({why}). "
                "Start a new pool, or add nodes with pool.resize(n)."
            ))

    async def _start(self) -> None:
        self.bus.emit(ClusterRequested(spec_summary=_describe(self.specs), nodes=self.specs[0].nodes.desired, pool=self.name))
        started = self._requested_at = time.monotonic()
        from skyward.bootstrap.wheels import prepare_wheels

        # Skyward's own wheels for the nodes: a client that cannot ship itself fails before any
        # machine is asked for, and the nodes then upload the cached wheels.
        await asyncio.to_thread(prepare_wheels, self.specs)
        errors: list[str] = []
        for spec in await self._specs_in_selection_order():
            try:
                await self._start_spec(spec)
                break
            except Exception as exc:
                errors.append(f"{spec.provider_config().name}: {exc}")
                if len(errors) == len(self.specs):
                    raise
                self.bus.emit(Error(message=f"falling back after {errors[-1]}", fatal=False, pool=self.name))
                await self._stop("fallback")
                self._closing = False
        self.bus.emit(ClusterReady(nodes=self.current_nodes(), seconds=time.monotonic() - started, pool=self.name))
        self._start_autoscaler()

    async def _specs_in_selection_order(self) -> list[Any]:
        """`selection="first"`: as written; `"cheapest"`: by the providers' hourly price, unknown last.

        A price may take a call to the cloud (an offer search), so each runs in a thread, all at
        once, and only when there is a choice to make. A provider that cannot price says nothing
        against it: it goes last, and a failure to price is logged, not raised.
        """
        specs = list(self.specs)
        if self.options.selection != "cheapest" or len(specs) < 2:
            return specs

        def price(spec: Any) -> float:
            estimate = getattr(spec.provider_config(), "hourly_price", None)
            value = estimate(spec) if estimate is not None else None
            return float("inf") if value is None else float(value) * spec.nodes.desired

        prices = await asyncio.gather(*(asyncio.to_thread(price, s) for s in specs), return_exceptions=True)
        for spec, found in zip(specs, prices, strict=True):
            if isinstance(found, BaseException):
                self._log.warning(
                    "skyward.price_unknown", provider=spec.provider_config().name, error=str(found)
                )
        order = [float("inf") if isinstance(p, BaseException) else p for p in prices]
        return [spec for _, _, spec in sorted(zip(order, range(len(specs)), specs, strict=True))]

    async def _start_spec(self, spec: Any) -> None:
        self.spec = spec
        self.hooks = PoolHooks(tuple(spec.plugins))
        self._provider = spec.provider_config().create()
        self._provider.options = self.options
        self.cluster = await self._provider.prepare(spec, self.name)
        self.image = self.hooks.transform_image(spec.image, self.cluster)
        self._secrets = env_secrets(self.image.env)
        for secret in self._secrets:  # masked in this pool's events, Skyward's logs and bootstrap errors
            register_secret(secret)
            self.bus.add_secret(secret)
        self.bootstrap_ops = self.hooks.bootstrap_ops(self.cluster)
        self._worker_plugins = self.hooks.worker_plugins()
        self._contexts_pending = any(getattr(p, "around_app", None) is not None for p in self._worker_plugins)
        self.workers_per_node = self.hooks.workers_per_node(spec)
        count = spec.nodes.desired
        instances = await self._provider.provision(self.cluster, list(range(count)))
        self._spend.started(instances)
        for instance in instances:
            self._instances[instance.node] = instance
            self.bus.emit(InstanceProvisioned(node=instance.node, instance_id=instance.id, instance=None, pool=self.name))
        self.bus.emit(ClusterProvisioned(nodes=len(instances), pool=self.name))
        starts = [asyncio.ensure_future(self._start_workers(i, count)) for i in instances]
        needed = spec.nodes.min or count
        done = failed = 0
        failure: BaseException | None = None
        for next_done in asyncio.as_completed(starts):
            try:
                await next_done
                done += 1
            except Exception as exc:  # noqa: BLE001 - the first failure is raised below
                failure = failure or exc
                failed += 1
            # Enough nodes, or no longer enough left to reach it: a failed bootstrap stops the
            # others at once rather than after they finish (paid minutes on a cloud).
            if done >= needed or len(starts) - failed < needed:
                break
        if done < needed:
            for pending in starts:
                pending.cancel()
            await asyncio.gather(*starts, return_exceptions=True)  # let each cancelled start clean up
            raise failure or RuntimeError("nodes failed to start")

    def _bootstrap_timeout(self) -> float:
        """`Options.bootstrap_timeout` when set, else the image's own."""
        option = self.options.bootstrap_timeout
        return float(option if option is not None else self.image.bootstrap_timeout)

    def _launch_command(self, index: int, total: int) -> LaunchCommand:
        """The worker's start command, folded through every plugin's launcher in plugin order."""
        instance, head = self._instances[index], self._instances.get(0, self._instances[index])
        return self.hooks.worker_launch(
            self._provider, self.cluster, index=index, total=total, instance=instance, head=head,
            worker=self.worker,
        )

    def _instance_info(self, index: int, total: int) -> InstanceInfo:
        spec, instances = self.spec, self._instances
        head = instances.get(0) or next(iter(instances.values()))
        instance = instances[index]
        acc = spec.accelerator
        count = float(acc.count) if acc is not None else 0.0
        return InstanceInfo(
            node=index, total_nodes=total, id=instance.id, provider=self.cluster.provider,
            ip=instance.public_ip, private_ip=instance.private_ip, spot=instance.spot,
            ssh_port=instance.ssh_port, hourly_rate=instance.hourly_rate,
            on_demand_rate=instance.on_demand_rate, instance_type=instance.instance_type,
            gpu_count=int(count), gpu_model=acc.name if acc is not None else "",
            vcpus=instance.vcpus, memory_gb=instance.memory_gb,
            gpu_vram_gb=int(acc.memory_gb or 0) if acc is not None else 0,
            accelerators=count, total_accelerators=count * total,
            head_addr=head.private_ip, head_port=self.cluster.head_port, job_id=self.name,
            peers=tuple(PeerInfo(i.node, i.private_ip, i.public_ip) for i in sorted(instances.values(), key=lambda i: i.node)),
            accelerator=acc.to_info() if acc is not None else None,
        )

    async def _start_workers(self, instance: Any, total: int) -> None:
        """Every worker process of one node (one, unless a plugin such as mig asks for more)."""
        await asyncio.gather(*(self._start_node(instance.node, instance, total, worker=w) for w in range(self.workers_per_node)))

    async def _start_node(self, index: int, instance: Any, total: int, worker: int = 0) -> NodeHandle:
        setup = NodeSetup(
            image=self.image, ops=self.bootstrap_ops, launch=self._launch_command(index, total),
            emit=self.bus.emit, bootstrap_timeout=self._bootstrap_timeout(), secrets=self._secrets,
            worker=worker,
        )
        channel = await self._provider.connect(self.cluster, instance, setup)
        info = attrs.evolve(self._instance_info(index, total), worker=worker, workers_per_node=self.workers_per_node)
        key = index * self.workers_per_node + worker
        node = NodeHandle(
            index, instance, info, channel, self.worker.concurrency + self.worker.buffer,
            self.bus.emit, self._on_node_lost, self._scheduler.pump_soon, key=key,
            listens=self.bus.listens, pool=self.name,
        )
        hello = Hello(
            info=info, concurrency=self.worker.concurrency, executor=self.executor,
            reuse_processes=self.worker.reuse_processes, env=dict(self.image.env),
            sys_path=(), plugins=self._worker_plugins, ttl=float(self.spec.ttl),
            shutdown_command=getattr(self._provider, "shutdown_command", None),
            include_sources=include_sources(self.image.includes),
        )
        try:
            await node.handshake(hello, HANDSHAKE_TIMEOUT)
        except BaseException:
            node.lost = True
            channel.kill()
            await channel.close(timeout=1)
            raise
        self._scheduler.nodes[key] = node
        node.start_pings(min(self.spec.ttl / 3, 30.0) if self.spec.ttl > 0 else 0)
        if worker == 0:
            self.bus.emit(InstanceBootstrapped(node=index, instance=info, pool=self.name))
            self.bus.emit(NodeReady(node=index, instance=info, pool=self.name))
        self._scheduler.pump()
        return node

    async def _resize(self, desired: int, reason: str = "pool.resize()") -> None:
        async with self._resize_lock:
            previous = len(self._instances)
            await self._resize_unlocked(desired)
            if len(self._instances) != previous:
                now = len(self._instances)
                self.bus.emit(PoolResized(nodes=now, previous=previous, reason=reason, pool=self.name))

    async def _resize_unlocked(self, desired: int) -> None:
        current = sorted(self._instances)
        if desired > len(current):
            new = list(range(max(current, default=-1) + 1, max(current, default=-1) + 1 + desired - len(current)))
            instances = await self._provider.provision(self.cluster, new)
            self._spend.started(instances)
            for instance in instances:
                self._instances[instance.node] = instance
            starts = await asyncio.gather(
                *(self._start_workers(i, desired) for i in instances), return_exceptions=True
            )
            failed = [(i, e) for i, e in zip(instances, starts, strict=True) if isinstance(e, BaseException)]
            if failed:
                # A node that did not start is given back: no half-started machine stays billed,
                # and broadcasts do not wait for it.
                await self._give_back([i for i, _ in failed])
            self._announce_places(exclude={i.node for i in instances})
            if failed:
                raise failed[0][1]
        elif desired < len(current):
            for index in current[desired:]:
                instance = self._instances.pop(index)
                keys = set()
                for node in [n for n in list(self._scheduler.nodes.values()) if n.index == index]:
                    del self._scheduler.nodes[node.key]
                    keys.add(node.key)
                    node.lost = True
                    for task in list(node.inflight.values()):
                        task.node = None
                        self._scheduler.requeue(task)
                    node.inflight.clear()
                    await node.channel.close(self.options.shutdown_timeout)
                self._fail_pinned(keys, index, f"left the pool when it was resized to {desired} node(s)")
                await self._terminate([instance])
            self._announce_places()
            self._scheduler.pump()

    async def _give_back(self, instances: list[Any]) -> None:
        """Drop `instances` from the pool: their workers closed, the machines terminated."""
        for instance in instances:
            self._instances.pop(instance.node, None)
            keys = set()
            for node in [n for n in list(self._scheduler.nodes.values()) if n.index == instance.node]:
                del self._scheduler.nodes[node.key]
                keys.add(node.key)
                node.lost = True
                await node.channel.close(timeout=1)
            self._fail_pinned(keys, instance.node, "did not start and was given back")
        await self._terminate(instances)

    def _fail_pinned(self, keys: Collection[int], index: int, why: str) -> None:
        """Fail the queued tasks pinned to the workers `keys`, which left the pool: no other worker
        may run them (a broadcast's share, `target=`), and waiting would end only in a time-out
        that names the wrong cause."""
        for task in self._scheduler.drain():
            if task.target in keys:
                pinned = f"{task.name}() (task {task.id}) was pinned to node {index}"
                task.fail(NodeLostError(f"{pinned}, which {why}"))
            else:
                self._scheduler.enqueue(task)

    async def _terminate(self, instances: list[Any]) -> None:
        """Terminate machines the pool lets go; a failure is reported, never swallowed, since a
        machine left running costs money."""
        if not instances or self._provider is None:
            return
        try:
            await self._provider.terminate(self.cluster, instances)
        except Exception as exc:  # noqa: BLE001 - reported; the pool goes on
            self._report_cleanup_failure(f"could not terminate {', '.join(i.id for i in instances)}", exc)
        else:
            for instance in instances:
                self.bus.emit(InstanceDestroyed(node=instance.node, instance_id=instance.id, pool=self.name))
        finally:
            self._spend.stopped(instances)

    # -- elastic pools ---------------------------------------------------------------------------------

    def _start_autoscaler(self) -> None:
        """Size an elastic pool (`nodes=(2, 8)`, `Nodes(max=...)`) to its load from now on."""
        nodes = self.spec.nodes
        if nodes.max is None or nodes.ceiling <= nodes.floor:
            return
        options = self.options
        self._autoscaler = Autoscaler(
            floor=nodes.floor, ceiling=nodes.ceiling, cooldown=options.autoscale_cooldown
        )
        loop = asyncio.get_running_loop()
        self._autoscale_timer = loop.call_later(self._autoscale_interval(), self._autoscale_tick)

    def _autoscale_interval(self) -> float:
        """How often the load is sampled: the reconcile tick, or sooner when the cooldown or the
        idle timeout is shorter, so neither is overshot by more than half of itself."""
        options = self.options
        periods = [options.reconcile_tick_interval, options.autoscale_idle_timeout / 2]
        if options.autoscale_cooldown > 0:
            periods.append(options.autoscale_cooldown / 2)
        return max(0.05, min(periods))

    def _autoscale_tick(self) -> None:
        self._autoscale_timer = None
        if self._closing or self._autoscaler is None:
            return
        loop = asyncio.get_running_loop()
        if not self._scaling and not self._replacing and not self._resize_lock.locked():
            now = loop.time()
            load = self._load(now)
            target = self._autoscaler.target(load, now)
            if target != load.nodes:
                self._scaling = loop.create_task(self._autoscale(load, target))
        self._autoscale_timer = loop.call_later(self._autoscale_interval(), self._autoscale_tick)

    def _load(self, now: float) -> Load:
        per = self.workers_per_node
        idle_after = self.options.autoscale_idle_timeout
        idle_tail = 0
        for index in sorted(self._instances, reverse=True):
            handles = [n for n in self._scheduler.nodes.values() if n.index == index]
            if len(handles) < per or any(n.idle_for(now) < idle_after for n in handles):
                break
            idle_tail += 1
        waiting, queued = self._scheduler.backlog()
        return Load(
            nodes=len(self._instances), waiting=waiting, queued=queued,
            slots_per_node=(self.worker.concurrency + self.worker.buffer) * per, idle_tail=idle_tail,
        )

    async def _autoscale(self, load: Load, target: int) -> None:
        assert self._autoscaler is not None
        if target > load.nodes:
            reason = f"autoscale: {load.waiting} task(s) waiting"
        else:
            reason = f"autoscale: idle for {self.options.autoscale_idle_timeout:g}s"
        self._log.info("skyward.autoscale", nodes=load.nodes, target=target, reason=reason)
        try:
            await self._resize(target, reason)
        except Exception as exc:  # noqa: BLE001 - the pool goes on at its size; said, and tried again later
            message = f"autoscaling from {load.nodes} to {target} node(s) failed: {exc}"
            self.bus.emit(Error(message=message, fatal=False, pool=self.name))
        finally:
            self._autoscaler.changed(asyncio.get_running_loop().time())
            self._scaling = None
            self._scheduler.pump()

    def _announce_places(self, exclude: Collection[int] = ()) -> None:
        """Tell every worker its new place after a resize (`total_nodes`, `peers`), so
        `sky.instance_info()` and `sky.shard` in later tasks agree across old and new nodes.

        Sent on each worker's channel ahead of any later task, so every task read after it sees
        the new place. Nodes in `exclude` were started with it.
        """
        total = len(self._instances)
        for node in list(self._scheduler.nodes.values()):
            if node.index in exclude or node.lost:
                continue
            node.info = attrs.evolve(
                self._instance_info(node.index, total), worker=node.info.worker,
                workers_per_node=self.workers_per_node,
            )
            node.channel.send(Kind.INFO, 0, node.info)

    async def _stop(self, reason: str) -> None:
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self._autoscale_timer is not None:
            self._autoscale_timer.cancel()
            self._autoscale_timer = None
        if self._scaling is not None:
            # Stopped where it is: whatever it has added by now is in `_instances`, terminated below.
            self._scaling.cancel()
            await asyncio.gather(self._scaling, return_exceptions=True)
        for task in self._scheduler.drain():
            task.fail(PoolClosedError(f"{task.name}() was not run: {self.name} shut down ({reason or 'exit'})"))
        nodes = list(self._scheduler.nodes.values())
        for node in nodes:
            for task in list(node.inflight.values()):
                node.cancel(task.id)
                task.fail(PoolClosedError(f"{task.name}() was interrupted: {self.name} shut down on node {node.index}"))
            for task_id in list(node.sent_now):  # written from a caller's thread, not registered yet
                task = node.sent_now.pop(task_id, None)
                if task is not None:
                    task.fail(PoolClosedError(f"{task.name}() was interrupted: {self.name} shut down on node {node.index}"))
        await asyncio.gather(*(n.channel.close(self.options.shutdown_timeout) for n in nodes), return_exceptions=True)
        for node in nodes:
            node.flush_logs()
        self._scheduler.nodes.clear()
        if self._provider is not None and self.cluster is not None:
            await self._terminate(list(self._instances.values()))
            try:
                await self._provider.teardown(self.cluster)
            except Exception as exc:  # noqa: BLE001 - reported, as above
                self._report_cleanup_failure("could not remove what it created", exc)
        self._instances.clear()
        self.bus.emit(ClusterDestroyed(
            reason=reason, seconds=time.monotonic() - self._requested_at, cost=self._spend.usd, pool=self.name
        ))

    def _report_cleanup_failure(self, what: str, exc: BaseException) -> None:
        """Say loudly that something of this pool may still exist (and cost money), and what."""
        provider = getattr(self._provider, "name", "the provider")
        message = (
            f"{self.name}: {provider} {what} ({type(exc).__name__}: {exc}); check the provider's "
            "console and delete anything tagged with this pool's id"
        )
        self._log.error("skyward.cleanup_failed", pool=self.name, provider=provider, error=str(exc))
        self.bus.emit(Error(message=message, fatal=False, pool=self.name))

    # -- observability and signals -----------------------------------------------------------------------

    def _setup_observability(self) -> None:
        from skyward.console import Console
        from skyward.logging import configure_logging

        configure_logging(self.options.logging)
        mode = self.options.console_mode
        if mode != "silent":
            self._console = Console(mode)
            self._console.attach(self.bus)

    def _install_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous not in (signal.SIG_DFL, None):
            return

        def on_sigterm(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        self._previous_sigterm = previous
        signal.signal(signal.SIGTERM, on_sigterm)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    def __repr__(self) -> str:
        return f"<sky.Pool {self.name} {self._state} nodes={self.current_nodes()}>"

    # Reached only when the left side is not a pending call (a pending call's own operator runs
    # first): most often the result of a function not marked @sky.function, which already ran.
    def __rrshift__(self, value: Any) -> Any:
        raise not_a_call(">>", value)

    def __rmatmul__(self, value: Any) -> Any:
        raise not_a_call("@", value)

    def __lt__(self, value: Any) -> Any:  # `value > pool`, reflected: pools have no order
        raise not_a_call(">", value)


def _refuse_one_shot_iterators(pending: PendingFunction[Any]) -> None:
    """Refuse an iterator argument of a broadcast: it can be read once, so the workers would each
    get a share of its items, not all of them, where `@` promises each the same call. A list, a
    range or another re-iterable gives every worker all of it."""
    if not isinstance(pending, PendingFunction):
        return  # _prepare names that mistake
    named = [(f"Argument {i}", v) for i, v in enumerate(pending.args)]
    named += [(f"Argument {k}=", v) for k, v in pending.kwargs.items()]
    for label, value in named:
        if _is_one_shot(value):
            raise ConfigurationError(
                f"{label} of {pending.name}() is an iterator ({type(value).__name__}), which can be read "
                "only once, and `@` runs the call on every worker: they would split its items between "
                "them. Pass a list or another re-iterable (each worker then reads all of it), or "
                "dispatch one call per part with `>>` or pool.map."
            )


def _is_one_shot(value: Any) -> bool:
    try:
        return isinstance(value, Iterator) and iter(value) is value
    except Exception:  # noqa: BLE001 - an odd __iter__: not ours to judge
        return False


def _describe(specs: tuple[Any, ...]) -> str:
    parts = []
    for spec in specs:
        acc = f" {spec.accelerator}" if spec.accelerator is not None else ""
        parts.append(f"{spec.provider_config().name}{acc} x{spec.nodes.desired}")
    return " | ".join(parts)
