"""What a pool is doing, as a stream of frozen records (`skyward.observe.bus` carries them).

The pool's event loop runs in a background thread; it describes every step (provisioning, bootstrap,
tasks, remote output, metrics) as an `Event` and hands it to an `EventBus`. The console, the user's
`on_event=` callback and anything else that wants to watch subscribe to the bus. Events are plain
`attrs` records so they can be matched structurally::

    match event:
        case sky.Log(line=line): ...
        case sky.TaskCompleted(success=True, duration=d): ...
        case sky.BootstrapPhase(phase=p, event="completed"): ...

All fields are keyword-only, so use keyword patterns (positional patterns match nothing useful).

Every event is named for what happened (`TaskCompleted`, `NodeLost`, `ErrorReported`), so none
reads as an exception: `BootstrapPhaseFailed` is the event of the failure that
`skyward.errors.BootstrapFailed` raises to the caller. `Error` and `BootstrapError` name the same
two classes, as user code written against those names still matches them.
"""

from __future__ import annotations

import time as _time
from typing import Literal

import attrs

from skyward.task.instance import (
    InstanceInfo,  # at runtime, so typing.get_type_hints and cattrs resolve events
)

__all__ = [
    "BootstrapCommand",
    "BootstrapConsole",
    "BootstrapError",
    "BootstrapPhase",
    "BootstrapPhaseFailed",
    "BootstrapRequested",
    "ClusterDestroyed",
    "ClusterProvisioned",
    "ClusterReady",
    "ClusterRequested",
    "Error",
    "ErrorReported",
    "Event",
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
class BootstrapPhaseFailed(Event):
    """Bootstrap failed on `node`: the phase, the command and the last lines of its output.

    The exception raised to the caller for the same failure is `skyward.errors.BootstrapFailed`.
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
class ErrorReported(Event):
    """The pool reports a problem; `fatal` means the pool is shutting down because of it.

    An event, not an exception: a non-fatal one (a replacement that could not start, a release
    left unconfirmed) is told here and the pool goes on.
    """

    message: str
    fatal: bool = False
    node: int | None = None


@attrs.frozen(kw_only=True)
class SpecSkipped(ErrorReported):
    """A pool with several specs skipped one it could not start, before asking its cloud for
    anything, and went on to the next: the provider's credentials are missing (`credential`
    names the variable, e.g. "RUNPOD_API_KEY"), or its package is not installed (`credential`
    is empty; `reason` names the pip command). `provider` is the provider's public name
    ("RunPod"), `spec` the spec's place among the pool's specs (from 1).

    A non-fatal `ErrorReported`, so whatever shows errors shows it too; `message` says it in one line
    ("skipping RunPod: no RUNPOD_API_KEY (set it or pass RunPod(api_key=...))").
    """

    provider: str
    reason: str
    credential: str = ""
    spec: int = 0


#: Other names of the same classes, so `case sky.Error(...)` and `pool.on(sky.BootstrapError, ...)`
#: in user code match them.
Error = ErrorReported
BootstrapError = BootstrapPhaseFailed
