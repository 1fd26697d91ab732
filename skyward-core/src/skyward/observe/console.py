"""The progress a person sees while a pool runs, rendered from the event bus.

Four modes (`Options.console`): "rich" (a live spinner line for pool progress, milestones and remote
output printed above it), "log" (plain append-only `HH:MM:SS LEVEL message` lines, for files, pipes
and agents polling a file), "minimal" (milestones, failures and remote output only) and "silent".
Remote `Log` lines are printed in every mode but "silent": a `print` inside a task must reach the
client live. "rich" falls back to "log" when the stream is not a terminal, because cursor movement is
unreadable once captured to a file.

Tasks are counted, not narrated: "log" prints a progress line (done, failed, running, rate) at
most every `PROGRESS_INTERVAL` seconds while tasks complete, and every failure as it happens; a
line per task start and end only with `task_detail` (the pool sets it when its log level is
DEBUG). A pool of 10,000 short tasks would otherwise print 20,000 lines and spend more time
writing them than running the tasks. Attached to a bus, the console reads those counts from the
bus's `TaskTally` and subscribes without task events (`counting_tasks`), so a pool builds no
`TaskStarted`/`TaskCompleted` for the console alone (that cost a map of no-ops half its rate); the
rich console's spinner reads the running count when it draws, four times a second.

The end summary gives the totals: done and failed, how many times a task was retried (run again
after its node was lost), and what is still running, if anything (nothing, once every task has
ended: a retried task is one task, and a task the pool ended itself is counted as failed).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Literal, TextIO

import attrs

from skyward.observe import events as ev
from skyward.observe.bus import EventBus
from skyward.observe.dashboard import Meters, format_duration
from skyward.observe.live import LiveArea, View
from skyward.observe.tally import PROGRESS_INTERVAL as PROGRESS_INTERVAL
from skyward.observe.tally import Progress, TaskTally
from skyward.secrets import mask

ConsoleMode = Literal["rich", "minimal", "log", "silent"]

__all__ = ["Console", "ConsoleMode", "format_duration", "resolve_mode"]

_LEVEL_STYLES = {"INFO": "", "WARN": "yellow", "ERROR": "bold red"}
#: How a `ClusterDestroyed` reason begins when the pool's machines were parked, not ended
#: (`Options(linger=True)`): "linger 600 s for the next pool with this spec".
LINGERING = "linger"


def resolve_mode(mode: ConsoleMode | bool, stream: TextIO) -> ConsoleMode:
    """Turn `Options.console` into the mode actually used: True is "rich", False is "silent", and
    "rich" becomes "log" when `stream` is not a TTY."""
    if mode is True:
        mode = "rich"
    elif mode is False:
        mode = "silent"
    if mode not in ("rich", "minimal", "log", "silent"):
        raise ValueError(f"console mode {mode!r} is not one of 'rich', 'minimal', 'log', 'silent'")
    if mode == "rich" and not _isatty(stream):
        return "log"
    return mode


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or file-like objects without isatty
        return False


@attrs.frozen
class _Line:
    """One rendered message: its level, its text, and whether "minimal" shows it."""

    level: str
    text: str
    milestone: bool = False
    remote: bool = False

#: The events each of `Console._describe`'s parts tells of.
_POOL_EVENTS = (
    ev.ClusterRequested, ev.ClusterProvisioned, ev.ClusterReady, ev.PoolResized, ev.ShutdownRequested,
    ev.ClusterDestroyed,
)
_BOOTSTRAP_EVENTS = (
    ev.BootstrapPhase, ev.BootstrapCommand, ev.BootstrapConsole, ev.BootstrapPhaseFailed,
    ev.InstanceBootstrapped,
)
_NODE_EVENTS = (
    ev.InstanceLaunched, ev.InstanceRunning, ev.InstanceProvisioned, ev.NodeReady, ev.InstancePreempted,
    ev.InstanceReplaced, ev.NodeLost, ev.InstanceDestroyed,
)


class Console:
    """Renders pool events for a person; attach it to the pool's `EventBus`.

    Handlers run in the pool's event-loop thread; a lock keeps lines whole when several threads emit.
    """

    def __init__(
        self, mode: ConsoleMode | bool = "rich", stream: TextIO | None = None, *, task_detail: bool = False
    ) -> None:
        self._stream: TextIO = stream if stream is not None else sys.stderr
        self.mode: ConsoleMode = resolve_mode(mode, self._stream)
        #: A line per task start and end ("log"), instead of a progress line now and then.
        self.task_detail = task_detail
        #: Tasks as counts: the console's own while events are fed to `handle`, the bus's once attached.
        self._tally = TaskTally()
        self._attached = False
        self._unwatch = self._watch(self._tally)
        #: The tasks started and not ended, by id, while events are fed to `handle` (see `_count_task`).
        self._running_ids: set[int] = set()
        self._lock = threading.RLock()
        self._total = 0
        self._requested_at: float | None = None
        self._provisioned: set[int] = set()
        self._bootstrapped: set[int] = set()
        self._ready: set[int] = set()
        #: Each node's bootstrap phase in progress, and when it started.
        self._phase: dict[int, tuple[str, float]] = {}
        self._pool_ready = False
        self._shutting_down: float | None = None
        self._meters = Meters()
        self._rich = None
        self._live: LiveArea | None = None
        if self.mode == "rich":
            from rich.console import Console as RichConsole

            self._rich = RichConsole(file=self._stream, highlight=False, soft_wrap=True)

    def attach(self, bus: EventBus) -> Callable[[], None]:
        """Subscribe to every event on `bus`, tasks as its counts unless each task is printed;
        returns the unsubscribe function."""
        self._unwatch()
        self._tally, self._attached = bus.tally, True
        unwatch = self._unwatch = self._watch(bus.tally)
        unsubscribe = bus.on(ev.Event, self.handle, counting_tasks=not self._narrates_tasks)

        def detach() -> None:
            unsubscribe()
            unwatch()

        return detach

    @property
    def _narrates_tasks(self) -> bool:
        return self.mode == "log" and self.task_detail

    def _watch(self, tally: TaskTally) -> Callable[[], None]:
        """Read `tally`, and print its progress lines ("log" without `task_detail`)."""
        return tally.watch(self._print_progress if self.mode == "log" and not self.task_detail else None)

    def close(self) -> None:
        """Stop and clear the live area (rich mode); safe to call more than once."""
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None

    def handle(self, event: ev.Event) -> None:
        """Update progress counters from `event` and print what it means in this mode."""
        if self.mode == "silent":
            return
        kind = type(event)
        if kind is ev.TaskStarted or kind is ev.TaskCompleted:
            self._task(event)
            return
        with self._lock:
            line = self._describe(event)
            if self.mode == "rich":
                self._refresh_live()  # first, so the line printed above it shows the new counts
            if line is not None:
                self._write(line, event.time)

    # --- what each event means -------------------------------------------------------------------

    def _count(self, done: set[int]) -> str:
        total = max(self._total, len(done))
        return f"{len(done)}/{total}" if total else str(len(done))

    def _describe(self, event: ev.Event) -> _Line | None:
        """The line `event` prints (None: none), after updating the counts it changes."""
        if isinstance(event, _POOL_EVENTS):
            return self._describe_pool(event)
        if isinstance(event, _BOOTSTRAP_EVENTS):
            return self._describe_bootstrap(event)
        if isinstance(event, _NODE_EVENTS):
            return self._describe_node(event)
        return self._describe_other(event)

    def _describe_pool(self, event: ev.Event) -> _Line | None:
        """The pool as a whole: requested, provisioned, ready, resized, shutting down, gone."""
        match event:
            case ev.ClusterRequested(nodes=nodes, spec_summary=summary):
                self._total, self._requested_at = nodes, event.time
                name = f"pool {event.pool}" if event.pool else "pool"
                what = f" ({summary})" if summary else ""
                return _Line("INFO", f"{name} requested: {nodes} node(s){what}", milestone=True)
            case ev.ClusterProvisioned(nodes=nodes):
                return _Line("INFO", f"all {nodes} node(s) provisioned")
            case ev.ClusterReady(nodes=nodes, seconds=secs):
                self._pool_ready = True
                text = f"pool ready: {nodes} node(s) in {format_duration(secs)}"
                return _Line("INFO", text, milestone=True)
            case ev.PoolResized(nodes=nodes, previous=previous, reason=reason):
                self._total = nodes
                for seen in (self._provisioned, self._bootstrapped, self._ready):
                    seen.difference_update([n for n in seen if n >= nodes])  # the highest indices went
                text = f"pool resized: {previous} -> {nodes} node(s){_suffix(reason)}"
                return _Line("INFO", text, milestone=True)
            case ev.ShutdownRequested(reason=reason):
                self._shutting_down = event.time
                return _Line("INFO", f"shutting down{_suffix(reason)}")
            case ev.ClusterDestroyed(seconds=secs, cost=cost, reason=reason):
                self._shutting_down, self._pool_ready = None, False
                if not secs and self._requested_at is not None:
                    secs = event.time - self._requested_at
                self._requested_at = None
                spent = f", ~${cost:.2f}" if cost else ""
                text = f"pool destroyed after {format_duration(secs)}{spent}"
                if reason.startswith(LINGERING):  # parked, not destroyed: say what still runs
                    text = f"pool ended after {format_duration(secs)}{spent}; its machines {reason}"
                if self.mode != "minimal":  # minimal: milestones only
                    text += self._summary()
                return _Line("INFO", text, milestone=True)
        return None

    def _describe_bootstrap(self, event: ev.Event) -> _Line | None:
        """A node's bootstrap: its phases, commands and output (the last two in the log mode only)."""
        match event:
            case ev.BootstrapPhase(node=node, phase=phase, event="started"):
                self._phase[node] = (phase, event.time)
                return _Line("INFO", f"node {node}: bootstrap {phase}...")
            case ev.BootstrapPhase(node=node, phase=phase, event="completed", seconds=secs):
                self._phase.pop(node, None)
                return _Line("INFO", f"node {node}: bootstrap {phase} done in {format_duration(secs)}")
            case ev.BootstrapPhase(node=node, phase=phase):
                return _Line("ERROR", f"node {node}: bootstrap {phase} failed", milestone=True)
            case ev.BootstrapCommand(node=node, command=command):
                return _Line("INFO", f"node {node}: $ {command}") if self.mode == "log" else None
            case ev.BootstrapConsole(node=node, line=line):
                return _Line("INFO", f"[node {node} bootstrap] {line}") if self.mode == "log" else None
            case ev.BootstrapPhaseFailed(node=node, phase=phase, output_tail=tail):
                detail = "".join(f"\n    {t}" for t in tail.splitlines())
                return _Line("ERROR", f"node {node}: bootstrap failed in {phase}{detail}", milestone=True)
            case ev.InstanceBootstrapped(node=node):
                self._bootstrapped.add(node)
                self._phase.pop(node, None)
                return _Line("INFO", f"bootstrapped {self._count(self._bootstrapped)} node(s)")
        return None

    def _describe_node(self, event: ev.Event) -> _Line | None:
        """One node's machine and worker: launched, running, ready, preempted, replaced, lost, destroyed."""
        match event:
            case ev.InstanceLaunched(node=node, instance_id=iid):
                return _Line("INFO", f"node {node}: launched {iid}")
            case ev.InstanceRunning(node=node, ip=ip):
                return _Line("INFO", f"node {node}: running at {ip}")
            case ev.InstanceProvisioned(node=node):
                self._provisioned.add(node)
                return _Line("INFO", f"provisioned {self._count(self._provisioned)} node(s)")
            case ev.NodeReady(node=node):
                self._ready.add(node)
                return _Line("INFO", f"ready {self._count(self._ready)} node(s)")
            case ev.InstancePreempted(node=node, reason=reason):
                return _Line("WARN", f"node {node}: preempted{_suffix(reason)}", milestone=True)
            case ev.InstanceReplaced(node=node, old_id=old, new_id=new) if old == new:
                return _Line("INFO", f"node {node}: worker restarted on {new}", milestone=True)
            case ev.InstanceReplaced(node=node, old_id=old, new_id=new):
                return _Line("WARN", f"node {node}: machine {old} replaced by {new}", milestone=True)
            case ev.NodeLost(node=node, reason=reason, restart=True):
                self._ready.discard(node)
                return _Line("WARN", f"node {node}: {reason}", milestone=True)
            case ev.NodeLost(node=node, reason=reason):
                self._ready.discard(node)
                return _Line("WARN", f"node {node}: lost{_suffix(reason)}", milestone=True)
            case ev.InstanceDestroyed(node=node, instance_id=iid):
                return _Line("INFO", f"node {node}: destroyed {iid}")
        return None

    def _describe_other(self, event: ev.Event) -> _Line | None:
        """The rest: remote log lines, metrics (kept for the live view), retries, skipped specs, errors."""
        match event:
            case ev.Log(node=node, line=line):
                return _Line("INFO", f"[node {node}] {line}", milestone=True, remote=True)
            case ev.Metric(node=node):
                # A new batch means the node's last one is whole: the log writes it, now and then.
                written, meters = None, self._meters
                if self.mode == "log" and meters.opens(event) and meters.due_for_log(node, event.time):
                    written = _Line("INFO", "metrics " + meters.line(node))
                self._meters.record(event)
                return written
            case ev.TaskRetried(task_id=tid, name=name, node=node, attempt=n, reason=reason):
                return _Line("WARN", f"task {name}#{tid} retry {n} on node {node}{_suffix(reason)}")
            case ev.SpecSkipped(message=message):  # the pool goes on with the next spec: a warning
                return _Line("WARN", message, milestone=True)
            case ev.ErrorReported(message=message, fatal=fatal, node=node):
                where = f"node {node}: " if node is not None else ""
                return _Line("ERROR", f"{where}{'fatal: ' if fatal else ''}{message}", milestone=True)
        return None

    def _task(self, event: ev.Event) -> None:
        """A task's start or end: counted (here only when fed by hand: attached, the bus counts it);
        printed when it failed, or when each task is printed."""
        narrated = self._narrates_tasks
        match event:
            case ev.TaskStarted(task_id=tid, name=name, node=node):
                if not self._attached:
                    self._count_task(tid, event.time)
                if not narrated:
                    return
                line = _Line("INFO", f"task {name}#{tid} started on node {node}")
            case ev.TaskCompleted(task_id=tid, name=name, node=node, success=ok, duration=d, error=err):
                if not self._attached:
                    self._running_ids.discard(tid)
                    self._tally.finish(ok, event.time)
                if ok and not narrated:
                    return
                if ok:
                    line = _Line("INFO", f"task {name}#{tid} done on node {node} in {format_duration(d)}")
                else:
                    text = f"task {name}#{tid} failed on node {node} after {format_duration(d)}{_suffix(err)}"
                    line = _Line("ERROR", text, milestone=True)
            case _:
                return
        with self._lock:
            if self.mode == "rich":
                self._refresh_live()
            self._write(line, event.time)

    def _count_task(self, task_id: int, at: float) -> None:
        """Count a task's start from its event (the console's own tally): a task started again
        before it ended is a retry of it (its node was lost), as a node counts it on a bus's tally,
        not one more task left running."""
        if task_id in self._running_ids:
            self._tally.rerun()
        self._running_ids.add(task_id)
        self._tally.start(at)

    def _print_progress(self, progress: Progress) -> None:
        """The "log" console's task progress line, when the tally says one is due (at most every
        `PROGRESS_INTERVAL` seconds while tasks complete; none for a handful of tasks)."""
        p = progress
        text = f"tasks: {p.done:,} done, {p.failed:,} failed, {p.running:,} running ({p.per_second:,.0f}/s)"
        with self._lock:
            self._write(_Line("INFO", text), p.at)

    # --- output ----------------------------------------------------------------------------------

    def _write(self, line: _Line, when: float) -> None:
        if self.mode == "minimal" and not line.milestone:
            return
        # The bus masks events already; this covers a Console fed events by hand (`handle`) too.
        line = attrs.evolve(line, text=mask(line.text))
        if self._rich is not None:
            from rich.text import Text

            style = "dim" if line.remote else _LEVEL_STYLES.get(line.level, "")
            self._rich.print(Text(line.text, style=style))
            return
        if self.mode == "log":
            stamp = time.strftime("%H:%M:%S", time.localtime(when))
            # Every line stamped, a summary's and an error's detail too: a log is read line by line.
            text = "\n".join(f"{stamp} {line.level:<5} {part}" for part in line.text.split("\n"))
        else:
            text = line.text
        self._stream.write(text + "\n")
        self._stream.flush()  # append-only output is polled by people and agents while the pool runs

    def _refresh_live(self) -> None:
        """Show what is in progress (counts, each step's elapsed time) and the nodes' metrics.

        The live area runs from the first event until `close`; nothing in progress leaves it empty.
        """
        if self._live is None:
            assert self._rich is not None
            self._live = LiveArea(self._rich, status=self._status_text)
        phases = tuple((node, phase, started) for node, (phase, started) in sorted(self._phase.items()))
        running = self._pool_ready and self._shutting_down is None
        rows = tuple(self._meters.rows()) if running else ()
        self._live.show(View(phases=phases, rows=rows))

    def _status_text(self) -> tuple[str | None, float | None]:
        """The spinner's text and since when its step has lasted (None, None: nothing in progress).

        Read by the live area as it draws, on Rich's thread and without the console's lock: it reads
        plain fields and counts, which the console and the tally replace or bump whole.
        """
        if self._shutting_down is not None:
            return "shutting down...", self._shutting_down
        if self._requested_at is not None and not self._pool_ready:
            parts = [f"provisioned {self._count(self._provisioned)}",
                     f"bootstrapped {self._count(self._bootstrapped)}",
                     f"ready {self._count(self._ready)}"]
            return "pool: " + ", ".join(parts), self._requested_at
        running = self._tally.running
        if running:
            return f"{running} task(s) running", self._tally.busy_since
        return None, None

    def _summary(self) -> str:
        """The end of the pool's story: its tasks and each node's utilisation (when it was sampled)."""
        nodes = self._meters.summary()
        return _task_summary(self._tally) + "".join(f"\n{line}" for line in nodes)


def _task_summary(tally: TaskTally) -> str:
    """The summary's task line: done, failed, the retries when there were any, and the tasks
    still running when some are (none once every task has ended); empty when no task ran."""
    done, failed, retried, running = tally.done, tally.failed, tally.retried, tally.running
    if not (done or failed or running):
        return ""
    text = f"\ntasks: {done} done, {failed} failed"
    if retried:
        text += f", {retried} {'retry' if retried == 1 else 'retries'}"
    if running:
        text += f", {running} still running"
    return text


def _suffix(reason: str) -> str:
    return f": {reason}" if reason else ""
