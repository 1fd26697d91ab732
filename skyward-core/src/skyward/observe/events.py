"""What a pool is doing, as a stream of frozen records, and the bus that carries them.

The pool's event loop runs in a background thread; it describes every step (provisioning, bootstrap,
tasks, remote output, metrics) as an `Event` and hands it to an `EventBus`. The console, the user's
`on_event=` callback and anything else that wants to watch subscribe to the bus. Events are plain
`attrs` records so they can be matched structurally::

    match event:
        case sky.Log(line=line): ...
        case sky.TaskCompleted(success=True, duration=d): ...
        case sky.BootstrapPhase(phase=p, event="completed"): ...

All fields are keyword-only, so use keyword patterns (positional patterns match nothing useful).

Naming note: the bootstrap-failure *event* is `BootstrapError`, because `skyward.errors.BootstrapFailed`
is the *exception* raised to the caller; having both under one name on `sky` would be ambiguous.
"""

from __future__ import annotations

import functools
import threading
import time as _time
from collections.abc import Callable, Iterable
from typing import Literal, TypeVar

import attrs
import structlog

from skyward.observe.tally import TaskTally
from skyward.secrets import MASK as MASK
from skyward.secrets import mask_ordered, mask_secrets, masking_order, registered_secrets, registry_generation
from skyward.task.instance import (
    InstanceInfo,  # at runtime, so typing.get_type_hints and cattrs resolve events
)

__all__ = [
    "BootstrapCommand",
    "BootstrapConsole",
    "BootstrapError",
    "BootstrapPhase",
    "BootstrapRequested",
    "ClusterDestroyed",
    "ClusterProvisioned",
    "ClusterReady",
    "ClusterRequested",
    "Error",
    "Event",
    "EventBus",
    "InstanceBootstrapped",
    "InstanceDestroyed",
    "InstanceLaunched",
    "InstancePreempted",
    "InstanceProvisioned",
    "InstanceReplaced",
    "InstanceRequested",
    "InstanceRunning",
    "Log",
    "Metric",
    "NodeLost",
    "PoolResized",
    "NodeReady",
    "ShutdownRequested",
    "SpecSkipped",
    "TaskCompleted",
    "TaskRetried",
    "TaskStarted",
    "mask_secrets",
    "redact",
]

Stream = Literal["stdout", "stderr"]
PhaseEvent = Literal["started", "completed", "failed"]


@attrs.frozen(kw_only=True)
class Event:
    """Base of every event: which pool it came from and when (epoch seconds, client clock)."""

    pool: str = ""
    time: float = attrs.field(factory=_time.time)


# --- requests (commands) ------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ClusterRequested(Event):
    """The user entered `with sky.Compute(...)`; `spec_summary` describes what was asked, in one line."""

    spec_summary: str = ""
    nodes: int


@attrs.frozen(kw_only=True)
class InstanceRequested(Event):
    """A node slot needs a machine (initial start, replacement or scale-up)."""

    node: int


@attrs.frozen(kw_only=True)
class ShutdownRequested(Event):
    """The pool is being torn down (block exit, Ctrl-C, SIGTERM, fatal error)."""

    reason: str = ""


@attrs.frozen(kw_only=True)
class BootstrapRequested(Event):
    """A running instance is about to be bootstrapped (environment, packages, worker)."""

    node: int


# --- cluster lifecycle --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ClusterProvisioned(Event):
    """Every requested machine exists; bootstrap may still be running."""

    nodes: int


@attrs.frozen(kw_only=True)
class ClusterReady(Event):
    """Enough nodes are ready for the `with` body to run; `seconds` since the request."""

    nodes: int
    seconds: float = 0.0


@attrs.frozen(kw_only=True)
class ClusterDestroyed(Event):
    """Every machine is gone. `seconds` is the pool's whole lifetime, `cost` the estimated spend in USD."""

    reason: str = ""
    seconds: float = 0.0
    cost: float = 0.0


# --- instance pipeline --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class InstanceLaunched(Event):
    """The provider accepted the launch; the machine is not running yet."""

    node: int
    instance_id: str


@attrs.frozen(kw_only=True)
class InstanceRunning(Event):
    """The machine is up and reachable at `ip`; bootstrap can start."""

    node: int
    instance_id: str
    ip: str


@attrs.frozen(kw_only=True)
class InstanceProvisioned(Event):
    """The machine for `node` exists and is described by `instance`."""

    node: int
    instance_id: str
    instance: InstanceInfo | None = None


@attrs.frozen(kw_only=True)
class InstanceBootstrapped(Event):
    """Bootstrap finished on `node`; the worker is starting."""

    node: int
    instance: InstanceInfo | None = None


@attrs.frozen(kw_only=True)
class InstancePreempted(Event):
    """The provider took a spot machine back; tasks on it will be retried elsewhere."""

    node: int
    reason: str = ""
    instance_id: str = ""


@attrs.frozen(kw_only=True)
class InstanceReplaced(Event):
    """A lost machine was replaced by a new one in the same node slot."""

    node: int
    old_id: str
    new_id: str


@attrs.frozen(kw_only=True)
class InstanceDestroyed(Event):
    """The machine was terminated."""

    node: int
    instance_id: str


# --- nodes --------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class NodeReady(Event):
    """The worker on `node` answered the handshake and accepts tasks."""

    node: int
    instance: InstanceInfo | None = None


@attrs.frozen(kw_only=True)
class PoolResized(Event):
    """The pool changed size: `pool.resize(...)`, or an elastic pool's autoscaler (`reason` says why)."""

    nodes: int
    previous: int
    reason: str = ""


@attrs.frozen(kw_only=True)
class NodeLost(Event):
    """The connection to `node` is gone and could not be restored, or the pool stopped the node's
    worker to start it again (`restart`: a timed-out task that did not stop when cancelled, which
    only ending its process can stop). `reason` says which, in words for the user."""

    node: int
    reason: str = ""
    restart: bool = False


# --- execution ----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class TaskStarted(Event):
    """A task was handed to the worker on `node`."""

    task_id: int
    name: str
    node: int


@attrs.frozen(kw_only=True)
class TaskCompleted(Event):
    """A task finished; `error` is the one-line remote error when `success` is False."""

    task_id: int
    name: str
    node: int
    success: bool
    duration: float
    error: str = ""


@attrs.frozen(kw_only=True)
class TaskRetried(Event):
    """A task is being run again (its node was lost or preempted); `attempt` counts from 1."""

    task_id: int
    name: str
    node: int
    attempt: int
    reason: str = ""


# --- bootstrap streaming ------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class BootstrapConsole(Event):
    """One line of bootstrap output on `node`."""

    node: int
    line: str
    stream: Stream = "stdout"


@attrs.frozen(kw_only=True)
class BootstrapPhase(Event):
    """A bootstrap phase on `node` `started`, `completed` (after `seconds`) or `failed`."""

    node: int
    phase: str
    event: PhaseEvent
    seconds: float = 0.0


@attrs.frozen(kw_only=True)
class BootstrapCommand(Event):
    """A shell command bootstrap is about to run on `node` (secrets already masked)."""

    node: int
    command: str


@attrs.frozen(kw_only=True)
class BootstrapError(Event):
    """Bootstrap failed on `node`: the phase, the command and the last lines of its output.

    The docs call this event `BootstrapFailed`; that name belongs to the exception
    `skyward.errors.BootstrapFailed`, raised to the caller for the same failure.
    """

    node: int
    phase: str
    command: str = ""
    output_tail: str = ""


# --- observability ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Log(Event):
    """A line a task printed on `node`, forwarded live so remote prints reach the client as they happen."""

    instance: InstanceInfo | None = None
    node: int
    line: str
    stream: Stream = "stdout"


@attrs.frozen(kw_only=True)
class Metric(Event):
    """One telemetry sample (`gpu_utilization`, `cpu`, ...) collected on `node`."""

    instance: InstanceInfo | None = None
    node: int
    name: str
    value: float
    unit: str = ""


@attrs.frozen(kw_only=True)
class Error(Event):
    """Something went wrong; `fatal` means the pool is shutting down because of it."""

    message: str
    fatal: bool = False
    node: int | None = None


@attrs.frozen(kw_only=True)
class SpecSkipped(Error):
    """A pool with several specs skipped one it could not start, before asking its cloud for
    anything, and went on to the next: the provider's credentials are missing (`credential`
    names the variable, e.g. "RUNPOD_API_KEY"), or its package is not installed (`credential`
    is empty; `reason` names the pip command). `provider` is the provider's public name
    ("RunPod"), `spec` the spec's place among the pool's specs (from 1).

    A non-fatal `Error`, so whatever shows errors shows it too; `message` says it in one line
    ("skipping RunPod: no RUNPOD_API_KEY (set it or pass RunPod(api_key=...))").
    """

    provider: str
    reason: str
    credential: str = ""
    spec: int = 0


# --- secrets ------------------------------------------------------------------------------------


# `mask_secrets` (every occurrence of each secret, and every URL password, read `***`) lives in
# `skyward.secrets` and is re-exported here, where the bootstrap runner and `sky.plan` import it.


E = TypeVar("E", bound=Event)


def redact(event: E, secrets: Iterable[str]) -> E:
    """Return `event` with every string field that contains a secret masked (the same object if none does).

    Events end up in consoles, log files and user callbacks, so a token that slipped into a
    bootstrap command or a remote print must be masked before the event is emitted. URL passwords
    (`https://user:password@host`) are masked too, even when `secrets` is empty.
    """
    return redact_ordered(event, masking_order(secrets))


def redact_ordered(event: E, ordered: list[str]) -> E:
    """`redact` with the secrets already in `masking_order` (the bus sorts them once, not per event)."""
    changes: dict[str, str] = {}
    for name in _field_names(type(event)):
        value = getattr(event, name)
        # Without secrets only a URL can hold one: a task's events (name, pool) skip the masking.
        if isinstance(value, str) and (ordered or ("://" in value and "@" in value)):
            masked = mask_ordered(value, ordered)
            if masked != value:
                changes[name] = masked
    return attrs.evolve(event, **changes) if changes else event


@functools.cache
def _field_names(kind: type) -> tuple[str, ...]:
    """An event class's field names, read once: `redact` runs for every event emitted."""
    return tuple(field.name for field in attrs.fields(kind))


# --- the bus ------------------------------------------------------------------------------------


@attrs.define
class _Subscription:
    event_type: type[Event]
    handler: Callable[[Event], None]
    #: Reads a task's start and successful end as counts (`EventBus.tally`), not as events.
    counting: bool = False


@attrs.define
class EventBus:
    """Delivers events to subscribers, synchronously, in the thread that emits them.

    Handlers run in registration order. A handler that raises is logged with its name and skipped:
    one broken callback must not stop the console, the other handlers, or the pool's event loop.
    Subscribing and unsubscribing are safe from any thread, including from inside a handler.
    Secrets added with `add_secret`, every value registered with `skyward.secrets.register_secret`
    (by any pool, plugin or provider of this process) and URL passwords are masked out of every
    event before any handler sees it.
    """

    _subscriptions: list[_Subscription] = attrs.field(factory=list, init=False)
    _secrets: set[str] = attrs.field(factory=set, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    #: The secrets to mask, longest first, and the (bus secrets, registry) state they were sorted for.
    _ordered: list[str] = attrs.field(factory=list, init=False)
    _ordered_for: tuple[int, int] = attrs.field(default=(-1, -1), init=False)
    #: Every task, counted: by its node when no handler wants its events, else here as they pass.
    tally: TaskTally = attrs.field(factory=lambda: TaskTally(counting=False), init=False)
    #: `listens`'s answers, replaced by an empty dict after the subscriptions change.
    _wanted: dict[type[Event], bool] = attrs.field(factory=dict, init=False)

    def on(
        self, event_type: type[E], handler: Callable[[E], None], *, counting_tasks: bool = False
    ) -> Callable[[], None]:
        """Call `handler` for every emitted event that is an instance of `event_type`.

        `on(Event, handler)` receives everything (this is what `on_event=` becomes). Returns a
        function that unsubscribes this registration; calling it twice is harmless.
        `counting_tasks`: the handler reads tasks as counts from `tally`, not as events (it still gets
        a failed `TaskCompleted`), so a pool builds no task events for it alone.
        """
        subscription = _Subscription(event_type, handler, counting_tasks)  # type: ignore[arg-type]
        with self._lock:
            self._subscriptions = [*self._subscriptions, subscription]  # emit reads it without the lock
            self._wanted = {}  # after the list: `listens` reads them in the other order

        def unsubscribe() -> None:
            with self._lock:
                # Identity, not equality: the same handler may be registered twice.
                self._subscriptions = [s for s in self._subscriptions if s is not subscription]
                self._wanted = {}

        return unsubscribe

    def listens(self, event_type: type[Event]) -> bool:
        """Whether an event of `event_type` would reach a handler (lets hot paths skip building it)."""
        wanted = self._wanted  # asked twice per task: answered from this dict
        if event_type not in wanted:
            task = event_type is TaskStarted or event_type is TaskCompleted
            matching = [s for s in self._subscriptions if issubclass(event_type, s.event_type)]
            wanted[event_type] = any(not (task and s.counting) for s in matching)
        return wanted[event_type]

    def add_secret(self, value: str) -> None:
        """Mask `value` out of every event emitted from now on (credentials, tokens, keys)."""
        if value:
            with self._lock:
                self._secrets.add(value)
                self._ordered_for = (-1, -1)

    def emit(self, event: Event) -> None:
        """Deliver `event` to every matching handler; never raises because of a handler."""
        kind, counted = type(event), False
        if kind is TaskStarted:
            self.tally.start(event.time)
            counted = True
        elif kind is TaskCompleted:
            counted = event.success  # type: ignore[attr-defined]
            self.tally.finish(counted, event.time)
        if not self._subscriptions:  # nobody listens (console and logging off): the common fast path
            return
        subscriptions = self._subscriptions  # replaced whole on (un)subscribe, never changed in place
        state = (len(self._secrets), registry_generation())
        if state != self._ordered_for:
            with self._lock:
                self._ordered = masking_order([*self._secrets, *registered_secrets()])
                self._ordered_for = state
        event = redact_ordered(event, self._ordered)
        for subscription in subscriptions:
            if not isinstance(event, subscription.event_type):
                continue
            if counted and subscription.counting:
                continue  # read from `tally`
            try:
                subscription.handler(event)
            except Exception:
                structlog.get_logger().exception(
                    "skyward.event_handler_failed",
                    handler=_handler_name(subscription.handler),
                    event_type=type(event).__name__,
                )


def _handler_name(handler: Callable[..., object]) -> str:
    """A readable name for a callback: module-qualified function or method name, else its repr."""
    name = getattr(handler, "__qualname__", None)
    module = getattr(handler, "__module__", None)
    if name is None:
        return repr(handler)
    return f"{module}.{name}" if module else name
