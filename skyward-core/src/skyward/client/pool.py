"""`Pool`: the synchronous facade over one pool's nodes (`sky.Compute`, `sky.ComputePool`).

The user's thread prepares tasks (pickling happens here, so a bad argument fails before dispatch)
and waits on their outcomes; the loop thread owns nodes, scheduling, timeouts and recovery. The
work is done by parts, each in its module:

- `client/preparation.py`: a call becomes a task (its function shipped, its frame encoded);
- `client/dispatch.py`: a task reaches a worker (the fast paths, the reply lane, the queue);
- `client/scheduler.py`: which worker runs the next queued task;
- `client/deadlines.py`: time limits, stuck workers, cancelling;
- `client/fleet.py`: machines and workers, started, lost, replaced, resized, stopped;
- `client/autoscaler.py`: an elastic pool's size, from its load.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import signal
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from skyward import active
from skyward.client import interrupts
from skyward.client.autoscaler import AutoscaleDriver
from skyward.client.deadlines import Deadlines
from skyward.client.dispatch import Dispatcher
from skyward.client.fleet import Fleet
from skyward.client.loop import LoopThread
from skyward.client.preparation import (
    ShipCache,
    build_task,
    not_pending,
    refuse_one_shot_iterators,
    shipped,
)
from skyward.client.relay import relay_broadcast
from skyward.client.scheduler import Scheduler
from skyward.client.tasks import RemoteGenerator, TaskState, Waiter
from skyward.errors import PoolClosedError
from skyward.extension import registry
from skyward.function import PendingFunction, PendingFunctionGroup, check_timeout, not_a_call, unwrap_function
from skyward.observe.bus import EventBus
from skyward.observe.events import Event, ShutdownRequested
from skyward.secrets import mask_exception

#: Signals held while the main thread runs the loop's work (`client/interrupts.py`).
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _FromFleet:
    """A pool attribute that is its fleet's, read-only."""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def __get__(self, pool: Pool | None, owner: type[Any] | None = None) -> Any:
        return self if pool is None else getattr(pool._fleet, self.name)


class Pool:
    """A pool of nodes; a context manager that provisions on enter and tears down on exit."""

    def __new__(cls, *specs: Any, name: str | None = None, options: Any = None, **kwargs: Any) -> Any:
        # `sky.Compute(name=NAME)` while a pool server holds NAME: the server's pool (client/attach.py).
        if cls is Pool and name is not None and not specs:
            from skyward.client.attach import attach

            attached = attach(name, options, kwargs)
            if attached is not None:
                return attached
        return super().__new__(cls)

    def __init__(self, *specs: Any, name: str | None = None, options: Any = None, **kwargs: Any) -> None:
        from skyward.resolve import resolve_compute_args

        on_event = kwargs.pop("on_event", None)
        # The pool server (skyward/server/) builds a pool's specs from its own table and names the
        # pool with `label=`: a name without loading skyward.toml.
        label = kwargs.pop("label", None)
        # The id the server keeps for a pool it restores on the same machines (else a new one).
        pool_id = kwargs.pop("pool_id", None)
        self.specs, self.options = resolve_compute_args(*specs, name=name, options=options, **kwargs)
        self.name = name or label or f"pool-{uuid.uuid4().hex[:8]}"
        if not (name or label):  # a name made here is unique already, and of an id's form
            pool_id = pool_id or self.name
        self.bus = EventBus()
        if on_event is not None:
            self.bus.on(Event, on_event)
        self.worker = self.options.worker_config
        self.executor = self.worker.resolved_executor
        self._loop_thread: LoopThread | None = None
        self._owns_loop = True
        self._scheduler = Scheduler()
        self._fleet = Fleet(self.name, self.specs, self.options, self.bus, self._scheduler, pool_id=pool_id)
        self._deadlines = Deadlines(self._scheduler, lambda: self._fleet.closing, self._fleet.restart)
        self._scheduler.on_dispatch = self._deadlines.arm
        self._dispatch = Dispatcher(self.name, self._scheduler, self._fleet, self._deadlines)
        #: Elastic pools only (`nodes=(2, 8)`): sizes the pool to its load every tick.
        self._autoscale = AutoscaleDriver(self._fleet, self._scheduler, self.options)
        self._state = "new"
        self._token: Any = None
        self._client_stack = contextlib.ExitStack()
        self._previous_sigterm: Any = None
        self._signals_held = False
        self._console: Any = None

    # -- what the pool runs on, known once it started (the fleet's: see client/fleet.py) -----------------

    #: The spec that provisioned (the first to, in `Options.selection` order).
    spec = _FromFleet()
    cluster = _FromFleet()
    #: The image after every plugin's transform.
    image = _FromFleet()
    bootstrap_ops = _FromFleet()
    workers_per_node = _FromFleet()
    #: The pool's distributed collections (`sky.dict`, `sky.lock`...: skyward/collections/store.py).
    collections = _FromFleet()

    @property
    def id(self) -> str:
        """What the pool's machines, keys and node folders are keyed by: its name made safe plus 8
        random hex digits, unique where the name is a label pools may share (`sky ls` shows it)."""
        return str(self._fleet.pool_id)

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
            raise PoolClosedError(
                f"{self.name} was already started; create a new sky.Compute(...) for a new pool"
            )
        self._state = "starting"
        self._setup_observability()
        registry.providers()  # entry points are discovered at pool start (cached per process)
        if loop is not None:
            self._loop_thread, self._owns_loop = loop, False
        else:
            self._loop_thread = LoopThread(f"skyward-{self.name}")
        self._dispatch.loop_thread = self._loop_thread
        self._install_sigterm()
        try:
            self._loop_thread.run(self._start())
            self._dispatch.expect_contexts(self._fleet.worker_plugins)
            self._state = "running"
            self._fleet.hooks.enter_clients(self._client_stack, self, self.cluster)
        except BaseException as exc:
            self.stop(reason="start failed")
            mask_exception(exc)  # in place: a provider's error may quote a credential it was given
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
                    # The workers' shutdown, then the provider's release (minutes on a cloud), and
                    # a margin: the fleet itself reports what it could not confirm by then.
                    timeout = self._fleet.stop_timeout() + 30
                    self._loop_thread.run(self._stop(reason), timeout=timeout)
            finally:
                if self._owns_loop and self._loop_thread is not None:
                    self._loop_thread.stop()
                self._restore_sigterm()
                if self._console is not None:
                    self._console.close()
                self._state = "stopped"

    def hold_machines(self) -> bool:
        """Record this running pool's machines so that a process started after this one crashed
        can start the pool again on them (a pool server does: skyward/server/pools.py). True when
        the provider keeps such a record (the clouds, which linger); the
        pool's own exit removes it."""
        fleet = self._fleet
        if self._state != "running" or self._loop_thread is None or fleet.cluster is None:
            return False
        held = fleet.provider.hold(fleet.cluster, list(fleet.instances.values()))
        return bool(self._loop_thread.run(held, timeout=60))

    async def _start(self) -> None:
        await self._fleet.start()
        self._autoscale.start(self.spec.nodes)

    async def _stop(self, reason: str) -> None:
        self.bus.emit(ShutdownRequested(reason=reason or "exit", pool=self.name))
        self._fleet.closing = True
        self._deadlines.stop()
        await self._autoscale.stop()
        why = f"{self.name} shut down ({reason or 'exit'})"
        for task in self._scheduler.drain():
            task.fail(PoolClosedError(f"{task.name}() was not run: {why}"))
        await self._fleet.teardown(reason)
        self._fleet.collections.close(reason)  # the collections' state lives as long as the pool

    # -- public: dispatch --------------------------------------------------------------------------------

    def run(self, pending: PendingFunction[Any], *, target: int | str | None = None) -> Any:
        """Run on one node (round-robin, or `target="head"` / a node index) and return the result.

        A generator function returns an iterator over its items as the worker yields them.
        """
        task = self._prepare(pending, target, waiter=Waiter())
        stream = None
        if task.stream is not None:
            task.collected = None  # items flow to the caller's iterator instead of a list
            call, deadlines = self._dispatch.call, self._deadlines
            stream = RemoteGenerator(
                task, lambda n: call(deadlines.grant, task, n), lambda: call(deadlines.cancel, task)
            )
        if stream is not None:
            self._dispatch.submit([task])
            return stream
        self._dispatch.submit([task], call=True, drive_until=lambda: task.done)
        loop_thread = self._loop_thread
        if loop_thread is None:
            return task.result()
        return loop_thread.wait_for(lambda: task.done, task.result)  # drives the loop meanwhile

    def run_async(
        self, pending: PendingFunction[Any], *, target: int | str | None = None
    ) -> concurrent.futures.Future[Any]:
        task = self._prepare(pending, target)
        self._dispatch.submit([task], blocking=False)
        assert task.future is not None
        # A caller that cancels its Future cancels the task: dropped if still queued, else told to stop.
        task.future.add_done_callback(
            lambda future: self._dispatch.call(self._deadlines.cancel, task) if future.cancelled() else None
        )
        return task.future

    def broadcast(self, pending: PendingFunction[Any]) -> list[Any]:
        """Run once on every worker (one per node unless a plugin such as mig asks for more);
        results in global worker order, which is node order (a generator's items as a list)."""
        self._require_running()  # a closed pool has no nodes: say so rather than return []
        keys = self._fleet.worker_keys()
        if len(keys) > 1:
            refuse_one_shot_iterators(pending)
        cache: ShipCache = {}
        waiter = Waiter()
        tasks = [self._prepare(pending, None, cache=cache, key=key, waiter=waiter) for key in keys]
        loop_thread = self._loop_thread
        if loop_thread is not None and not loop_thread.is_current():
            # A large argument crosses the client's link once; the nodes pass it on (client/relay.py).
            finish = relay_broadcast(tasks, self._scheduler, self._fleet, loop_thread)
            try:
                self._dispatch.submit(tasks)
                return [t.result() for t in tasks]
            finally:
                finish()  # the relay's key is out of every node's authorized_keys
        self._dispatch.submit(tasks)
        return [t.result() for t in tasks]

    def run_parallel(self, group: PendingFunctionGroup) -> Any:
        cache: ShipCache = {}
        # Streaming in completion order needs a Future per task (as_completed); the rest share a Waiter.
        waiter = None if group.stream and not group.ordered else Waiter()
        tasks = [self._prepare(p, None, cache=cache, waiter=waiter) for p in group.items]
        self._dispatch.submit(tasks)
        if group.stream:
            return _stream_results(tasks, group.ordered)
        return tuple(t.result() for t in tasks)

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        """One task per item (fn need not be decorated); results in input order."""
        self._require_running()
        raw = unwrap_function(fn)
        name = PendingFunction(raw).name
        timeout = check_timeout(getattr(fn, "timeout", None))
        if timeout is None:
            timeout = self.options.default_compute_timeout
        function = shipped(raw, name, self.executor)
        waiter = Waiter()
        tasks = [build_task(raw, name, function, (item,), {}, None, timeout, waiter) for item in items]
        for task in tasks:
            task.prefetch = True  # a map's short tasks may queue on a busy node (see client/node.py)
        waiter.expect(len(tasks))
        self._dispatch.submit(tasks)
        waiter.wait_all()
        return [t.result() for t in tasks]

    def current_nodes(self) -> int:
        """How many nodes are ready right now."""
        return self._fleet.current_nodes()

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
        self._loop_thread.run(self._fleet.resize(desired))

    def _prepare(
        self,
        pending: PendingFunction[Any],
        target: int | str | None,
        cache: ShipCache | None = None,
        key: int | None = None,
        waiter: Waiter | None = None,
    ) -> TaskState:
        """A call as a task, on the caller's thread (see client/preparation.py)."""
        if not isinstance(pending, PendingFunction):
            raise not_pending(pending)
        self._require_running()
        fn = unwrap_function(pending.fn)
        name = pending.name
        function = shipped(fn, name, self.executor, cache)
        timeout = pending.timeout if pending.timeout is not None else self.options.default_compute_timeout
        target_key = key if key is not None else self._fleet.target_key(target)
        return build_task(
            fn, name, function, pending.args, pending.kwargs, target_key, timeout, waiter, cache,
            self._content_addressed(),
        )

    def _content_addressed(self) -> bool:
        """Whether large arguments travel by content key (client/blobs.py): across a network."""
        from skyward.client import blobs
        from skyward.providers.local import LocalProvider

        return blobs.LOCAL_POOLS or not isinstance(getattr(self._fleet, "provider", None), LocalProvider)

    def _require_running(self) -> None:
        if self._state != "running":
            raise PoolClosedError(
                f"{self.name} is {self._state}: dispatch inside its `with sky.Compute(...) as pool:` block"
            )

    # -- observability and signals -----------------------------------------------------------------------

    def _setup_observability(self) -> None:
        from skyward.observe.console import Console
        from skyward.observe.logging import configure_logging

        configure_logging(self.options.logging)
        mode = self.options.console_mode
        if mode != "silent":
            level = getattr(self.options.logging, "level", "INFO")
            self._console = Console(mode, task_detail=level == "DEBUG")
            self._console.attach(self.bus)

    def _install_sigterm(self) -> None:
        """SIGTERM exits through the `with` block (the pool is torn down); Ctrl-C and SIGTERM wait
        while the main thread runs loop work (`interrupts`)."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous in (signal.SIG_DFL, None):

            def on_sigterm(signum: int, frame: Any) -> None:
                raise SystemExit(128 + signum)

            self._previous_sigterm = previous
            signal.signal(signal.SIGTERM, on_sigterm)
        for signum in HELD_SIGNALS:
            interrupts.install(signum)
        self._signals_held = True

    def _restore_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if self._signals_held:
            self._signals_held = False
            for signum in reversed(HELD_SIGNALS):
                interrupts.restore(signum)
        if self._previous_sigterm is not None:
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


def _stream_results(tasks: list[TaskState], ordered: bool) -> Iterator[Any]:
    if ordered:
        for task in tasks:
            yield task.result()
    else:
        for future in concurrent.futures.as_completed([t.future for t in tasks if t.future is not None]):
            yield future.result()
