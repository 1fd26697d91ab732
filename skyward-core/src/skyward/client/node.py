"""One node as the client sees it: its channel, its in-flight tasks, and their streams.

A node counts each task it announces (`started`) and the end its worker answers (`_completed`);
a task it announces is marked (`TaskState.report_end`) until that end is counted, so an end the
pool gives it another way (a time limit, a lost node, the pool's exit) is counted here too, and a
marked task announced again is a retry of the same task, not a new one (`TaskTally.rerun`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from skyward.client import telemetry
from skyward.client.deadlines import COARSE_TIMEOUT
from skyward.client.shipping import FunctionLedger
from skyward.client.window import (
    PACE_TASKS,
    PREFETCH_HORIZON,
    PREFETCH_MAX,
    RTT_EPOCH,
    window_size,
)
from skyward.messages import RemoteFailure
from skyward.observe.events import ErrorReported, Log, TaskCompleted, TaskStarted
from skyward.payload import Undecodable
from skyward.wire import Frame, Kind, as_kind

if TYPE_CHECKING:
    from skyward.client.tasks import TaskState
    from skyward.observe.tally import TaskTally
    from skyward.providers.base import Instance
    from skyward.task.instance import InstanceInfo
    from skyward.transport.base import Channel


class NodeStartError(RuntimeError):
    pass


class NodeHandle:
    def __init__(
        self,
        index: int,
        instance: Instance,
        info: InstanceInfo,
        channel: Channel,
        capacity: int,
        emit: Callable[[Any], None],
        on_lost: Callable[[NodeHandle, BaseException | None], None],
        on_free: Callable[[TaskState | None], None],
        key: int | None = None,
        listens: Callable[[type[Any]], bool] = lambda _: True,
        pool: str = "",
        tally: TaskTally | None = None,
        fixed_window: int | None = None,
    ) -> None:
        self.index = index
        #: The scheduler's key: the global worker index (the node index with one worker per node).
        self.key = index if key is None else key
        self.instance = instance
        self.info = info
        self.channel = channel
        #: Tasks that run at once on the worker (`Worker.concurrency`).
        self.capacity = capacity
        #: `Worker(buffer=N)` given: the node holds at most `capacity + N` tasks, whatever its round
        #: trip. None: the adaptive window (`window_size`).
        self.fixed_window = fixed_window
        #: The node's round trip (seconds): the least PING/PONG round trip of the last two samples'
        #: `RTT_EPOCH`s (`ping`); None until the first.
        self.rtt: float | None = None
        # The least sample of this period and of the one before, and when this one ends.
        self._rtt_least = self._rtt_before = float("inf")
        self._rtt_until = float("-inf")
        self._ping_at: float | None = None
        #: Tasks sent beyond the running slots, waiting on the worker in the order it runs them.
        self.waiting: deque[TaskState] = deque()
        #: Called with a waiting task when it takes a freed slot (its time limit starts then).
        self.on_start: Callable[[TaskState], Any] = lambda task: None
        self.emit = emit
        self._on_lost = on_lost
        self._on_free = on_free
        self.inflight: dict[int, TaskState] = {}
        #: Tasks written from a caller's thread that the loop has not registered yet.
        self.sent_now: dict[int, TaskState] = {}
        #: Where a lone synchronous call's answer comes straight to its caller (Local pipes).
        self.lane: Any = None
        self.stuck: set[int] = set()
        #: Takes no new task: a stuck task waits for the others to finish before its worker is
        #: replaced (see `Deadlines.check_stuck`).
        self.draining = False
        # The node's pace (`pace`): seconds of work over the tasks they were spent on, over the
        # last `PACE_TASKS` to twice that many answers, for the function `_pace_key`; and the last
        # completion.
        self._work = 0.0
        self._done = 0.0
        self._pace_key: bytes | None = None
        self._last_done = 0.0
        #: The functions the worker holds, and the lock every write of a task to it takes.
        self.functions = FunctionLedger()
        self.ready = False
        self.lost = False
        self._ready_future: asyncio.Future[Any] | None = None
        self._partial = {"stdout": "", "stderr": ""}
        self._loop = asyncio.get_running_loop()
        # A TaskCompleted nobody receives is not worth building for every task.
        self._listens = listens
        #: Where a task nobody wants the events of is counted instead (`EventBus.tally`).
        self._tally = tally
        #: What each task this node announces counts its end with (`TaskState.report_end`): one
        #: bound method for them all, not one built per task.
        self._report_end = self._completed
        #: The pool's name, on every event this node emits.
        self.pool = pool
        #: Where a HEALTH frame goes: `(check id, (healthy, detail))` (client/health.py).
        self.on_health: Callable[[int, Any], None] | None = None
        #: Where a COLLECTION frame goes: the pool's store (`skyward.collections.store`).
        self.on_collection: Callable[[NodeHandle, Frame], None] | None = None

    # -- lifecycle ----------------------------------------------------------------------------------

    async def handshake(self, hello: Any, timeout: float) -> dict[str, Any]:
        self._ready_future = self._loop.create_future()
        self.channel.on_frame = self._on_frame
        self.channel.on_closed = self._closed
        self.channel.start()
        self.channel.send(Kind.HELLO, 0, hello)
        try:
            answer = await asyncio.wait_for(self._ready_future, timeout)
        except TimeoutError:
            raise NodeStartError(f"node {self.index}'s worker did not answer within {timeout:.0f}s") from None
        if answer.get("reply_lane"):
            self.lane = self.channel.enable_lane()
        self.ready = True
        self._last_done = self._loop.time()  # idle from now (see idle_for)
        self.ping()  # the first round trip, for the window (the worker answers with a PONG)
        return answer

    def start_pings(self, interval: float) -> None:
        """Feed the worker's ttl watchdog: a PING every `interval` seconds while the node lives."""
        if interval <= 0:
            return

        def ping() -> None:
            if not self.lost:
                self.ping()
                self._loop.call_later(interval, ping)

        self._loop.call_later(interval, ping)

    def ping(self) -> None:
        """Send a PING. One sent while the node holds no task is a round trip sample (`rtt`): the
        worker answers it at once, where behind tasks its PONG would wait for them (and a task's
        own answer includes its work). One at a time: a PONG answers the first PING in flight.
        Sent after the handshake, by the ttl watchdog's timer, and when a node that has not been
        sampled for an `RTT_EPOCH` has nothing left to run (`_finish`)."""
        if self._ping_at is None and not (self.inflight or self.sent_now or self.stuck):
            self._ping_at = self._loop.time()
        self.channel.send(Kind.PING)

    def _rtt_sample(self, sample: float, now: float) -> None:
        """A round trip seen: `rtt` is the least of this sample's `RTT_EPOCH` and the one before
        (as TCP's min RTT filter: a slower route is seen within two)."""
        if now > self._rtt_until:  # a new period
            self._rtt_before, self._rtt_least = self._rtt_least, sample
            self._rtt_until = now + RTT_EPOCH
        elif sample < self._rtt_least:
            self._rtt_least = sample
        self.rtt = min(self._rtt_before, self._rtt_least)

    @property
    def free_slots(self) -> int:
        """Running slots free on the worker: a task sent now starts at once."""
        if self.draining:
            return 0
        return self.capacity - len(self.inflight) - len(self.stuck) - len(self.sent_now)

    @property
    def held(self) -> int:
        """Tasks this node holds: running, waiting on the worker, written from a caller's thread."""
        return len(self.inflight) + len(self.stuck) + len(self.sent_now)

    def window(self, key: bytes) -> int:
        """How many tasks of the function `key` this node may hold at once (running and waiting):
        `Worker(buffer=)`'s fixed window, else `window_size` from its round trip and its pace on
        that function (only that one: another function's pace says nothing of this one's)."""
        if self.draining:
            return 0
        if self.fixed_window is not None:
            return self.fixed_window
        if key != self._pace_key:
            return self.capacity
        return window_size(self.capacity, self.rtt, self._work / self._done)

    @property
    def pace(self) -> float | None:
        """Seconds per task while this node is kept busy, on the function it ran last (the round
        trip taken out, see `_finish`); None before its first answer."""
        return self._work / self._done if self._done else None

    def idle_for(self, now: float) -> float:
        """Seconds this node has had nothing to run (0 while it runs a task): an elastic pool
        gives back nodes that idle long enough (`Options.autoscale_idle_timeout`)."""
        if self.inflight or self.sent_now or self.stuck or not self.ready:
            return 0.0
        return now - self._last_done

    def prefetch(self, key: bytes | None = None) -> int:
        """Tasks of a `map` this node may hold beyond its slots (see `PREFETCH_HORIZON`).

        None unless it finished a task within the horizon and its oldest task is younger than
        that: a long task, or a node that was idle, gets no more than its slots; with `key`, none
        unless its pace was measured on that function.
        """
        if not self._done or self.stuck:
            return 0
        if key is not None and key != self._pace_key:
            return 0
        now = self._loop.time()
        if now - self._last_done > PREFETCH_HORIZON:
            return 0
        if self.inflight and now - next(iter(self.inflight.values())).started_at > PREFETCH_HORIZON:
            return 0
        return min(PREFETCH_MAX, int(PREFETCH_HORIZON / max(self._work / self._done, 1e-6)))

    # -- sending --------------------------------------------------------------------------------------

    def dispatch(self, task: TaskState, waits: bool = False) -> None:
        """Send a task the scheduler placed here (loop thread). `waits`: no running slot is free
        (`free_slots`), so it waits on the worker, which runs tasks in arrival order, until one is."""
        task.worker = self.key
        task.sent_at = task.started_at = self._loop.time()
        task.waits = waits
        if waits:
            self.waiting.append(task)
        self.inflight[task.id] = task
        self.started(task)
        functions = self.functions
        lock = functions.lock  # the ledger's order is the wire's (see FunctionLedger)
        lock.acquire()  # not `with`: this is every task's path, and `with` costs twice as much
        try:
            self.channel.send_parts(functions.parts(task.function, task.parts))
        finally:
            lock.release()

    def started(self, task: TaskState) -> None:
        """Emit `TaskStarted`, on the thread that will emit the task's `TaskCompleted`.

        That is the loop thread, except for a CALL, whose caller reads its answer on the reply
        lane and emits both (waking the loop for an event would cost that path its point). So a
        handler sees each task's two events in order, from one thread.
        """
        if task.report_end is not None and self._tally is not None:
            self._tally.rerun()  # its earlier run, on a node lost or let go, did not end it
        task.report_end = self._report_end
        if self._listens(TaskStarted):  # once per task: build the event only for a listener
            self.emit(TaskStarted(task_id=task.id, name=task.name, node=self.index, pool=self.pool))
        elif self._tally is not None:
            self._tally.start()  # counted only: the console reads counts, not events

    def send_now(self, task: TaskState, call: bool = False) -> bool:
        """Write `task` from the caller's thread (`Dispatcher._dispatch_now`); the loop registers it later.

        Until then it waits in `sent_now`, where an answer that beats the registration finds it.
        The function ledger's lock covers the write, so a task the loop sends meanwhile comes
        wholly before or after this one, FUNCTION frame included. `call`: send it as a CALL,
        answered on the reply lane (the caller holds the lane).
        """
        task.worker = self.key
        # The loop's clock is monotonic: readable from any thread. Sent to an idle slot: it starts now.
        task.sent_at = task.started_at = self._loop.time()
        task.waits = False
        self.sent_now[task.id] = task
        if call:
            task.call = True
            self.started(task)  # before the write: its TaskCompleted may follow at once
            parts = as_kind(task.parts, Kind.CALL)
        else:
            parts = task.parts
        functions = self.functions
        lock = functions.lock  # the ledger's order is the wire's (see FunctionLedger)
        lock.acquire()
        try:
            # Nothing written means the channel is closed for good: what the ledger now records
            # for its worker no longer matters.
            written = self.channel.send_now(functions.parts(task.function, parts))
        finally:
            lock.release()
        if not written:
            self.sent_now.pop(task.id, None)
        return written

    def register_sent(self, task: TaskState) -> bool:
        """Count a task written by `send_now` as in flight (loop thread); False if it already ended."""
        if self.sent_now.pop(task.id, None) is None:
            return False
        self.inflight[task.id] = task
        if not task.call and not task.done:  # done: cancelled meanwhile, never to be counted
            self.started(task)
        return True

    def finish_call(self, task: TaskState, frame: Frame) -> bool:
        """Resolve a CALL with the answer its caller read on the lane (the caller's thread).

        False if the loop took the task back meanwhile: the node was lost and the task queued again.
        """
        if self.sent_now.pop(task.id, None) is None:
            return False
        if task.done:
            return True  # the pool ended it meanwhile (a cancel), and counted its end then
        task.report_end = None  # its end is counted below, as the worker answered it
        if isinstance(frame.payload, Undecodable):
            self._fail_undecodable(task, frame)
        elif frame.kind is Kind.RESULT:
            task.resolve(frame.payload)
            self._completed(task, True)
        else:
            task.fail_remote(frame.payload, self.index)
            self._completed(task, False, frame.payload.type_name)
        return True

    def read_lane_until(self, task_id: int) -> None:
        """Read the lane on the loop until the answer to `task_id` is in: its caller stopped
        reading (time limit, interrupt, the worker died) and the loop took the task over."""
        self.lane.adopt(self._loop, self._on_frame, task_id)

    def cancel(self, task_id: int) -> None:
        self.channel.send(Kind.CANCEL, task_id)

    def credit(self, task_id: int, count: int) -> None:
        """Let a generator task run `count` items further ahead of its reader."""
        self.channel.send(Kind.CREDIT, task_id, count)

    # -- the pool's view: deadlines and membership (loop thread) ------------------------------------------

    def running(self) -> list[TaskState]:
        """The tasks in flight here that the loop registered (a copy)."""
        return list(self.inflight.values())

    def runs(self, task_id: int) -> bool:
        """Whether the task is in flight here, registered by the loop."""
        return task_id in self.inflight

    @property
    def busy(self) -> bool:
        """Whether any task is in flight here, written from a caller's thread or not."""
        return bool(self.inflight or self.sent_now)

    def forget(self, task_id: int) -> None:
        """Stop counting a task in flight: it is queued again elsewhere."""
        task = self.inflight.pop(task_id, None)
        if task is not None and task.waits:
            self._unwait(task)

    def abandon(self, task_id: int) -> None:
        """A task past its time limit: told to stop, it keeps its slot (`stuck`) until it does."""
        del self.inflight[task_id]
        self.stuck.add(task_id)
        self.cancel(task_id)

    def is_stuck(self, task_id: int) -> bool:
        return task_id in self.stuck

    def drain(self) -> bool:
        """Take no new task until the stuck one is dealt with; True if the node was not draining."""
        started, self.draining = not self.draining, True
        return started

    def end_drain(self) -> bool:
        """Take tasks again once nothing here is stuck any more; True if the drain was lifted."""
        if self.draining and not self.stuck:
            self.draining = False
            return True
        return False

    def move(self, info: InstanceInfo) -> None:
        """Tell the worker its new place in the pool (after a resize), ahead of any later task."""
        self.info = info
        self.channel.send(Kind.INFO, 0, info)

    async def close(self, timeout: float) -> None:
        """Close the channel: the worker exits, and is killed if still there after `timeout`."""
        await self.channel.close(timeout=timeout)

    def kill(self) -> None:
        """End the worker process now (a stuck task, a failed start): the node is lost."""
        self.lost = True
        self.ready = False
        self.channel.kill()

    def leave(self) -> list[TaskState]:
        """Leave the pool's service: lost from now on, output so far flushed, and the tasks it
        was running handed back for the pool to place again or fail."""
        self.lost = True
        tasks = self.running()
        self.inflight.clear()
        self.stuck.clear()
        self.waiting.clear()
        self.flush_logs()
        return tasks

    def interrupt(self) -> list[TaskState]:
        """The tasks running here, at the pool's shutdown: each one told to stop, and those not
        registered yet taken out of `sent_now`, for the pool to fail."""
        tasks = self.running()
        for task in tasks:
            self.cancel(task.id)
        for task_id in list(self.sent_now):  # written from a caller's thread, not registered yet
            task = self.sent_now.pop(task_id, None)
            if task is not None:
                tasks.append(task)
        return tasks

    # -- receiving ------------------------------------------------------------------------------------

    def _on_frame(self, frame: Frame) -> None:
        kind = frame.kind
        if isinstance(frame.payload, Undecodable):
            self._undecodable(frame)
        elif kind is Kind.RESULT:
            task = self._finish(frame.id)
            if task is not None:
                task.resolve(frame.payload)
                self._completed(task, True)
        elif kind is Kind.ERROR:
            if frame.id == 0:
                self._worker_failed(frame.payload)
                return
            task = self._finish(frame.id)
            if task is not None:
                task.fail_remote(frame.payload, self.index)
                self._completed(task, False, frame.payload.type_name)
        elif kind is Kind.YIELD:
            task = self.inflight.get(frame.id)
            if task is not None and task.collected is not None:
                task.collected.append(frame.payload)
                task.stream.received = True  # type: ignore[union-attr]
                self.channel.send(Kind.CREDIT, task.id, 1)
            elif task is not None and task.stream is not None:
                task.stream.put(frame.payload)
        elif kind is Kind.DONE:
            task = self._finish(frame.id)
            if task is not None and not task.done:  # done: an item failed to arrive (_undecodable)
                task.resolve(task.collected)
                self._completed(task, True)
        elif kind is Kind.PULL:
            self._pull(frame.id, frame.payload)
        elif kind is Kind.LOG:
            stream, text = frame.payload
            self._log(stream, text)
        elif kind is Kind.READY:
            if self._ready_future is not None and not self._ready_future.done():
                self._ready_future.set_result(frame.payload)
        elif kind is Kind.HEALTH:
            if self.on_health is not None:
                self.on_health(frame.id, frame.payload)
        elif kind is Kind.METRICS:
            telemetry.emit_batch(self, frame.payload)
        elif kind is Kind.COLLECTION and self.on_collection is not None:
            self.on_collection(self, frame)
        elif kind is Kind.PONG and self._ping_at is not None:
            now = self._loop.time()
            self._rtt_sample(now - self._ping_at, now)
            self._ping_at = None

    def _undecodable(self, frame: Frame) -> None:
        """A frame whose payload would not unpickle here (see `Undecodable`): the task it answers
        fails with the reason, and the node goes on serving."""
        kind = frame.kind
        if kind is Kind.YIELD:
            task = self.inflight.get(frame.id)
            if task is not None and not task.done:
                task.report_end = None  # its end is counted here; its DONE then counts nothing
                self._fail_undecodable(task, frame)
                self.cancel(task.id)  # its DONE still comes, and frees the slot
        elif kind is Kind.RESULT or kind is Kind.ERROR or kind is Kind.DONE:
            task = self._finish(frame.id)
            if task is not None:
                self._fail_undecodable(task, frame)
        elif kind is Kind.COLLECTION and self.on_collection is not None:
            self.on_collection(self, frame)  # the store answers the request with the reason
        elif kind is Kind.READY:
            if self._ready_future is not None and not self._ready_future.done():
                error = frame.payload.explain(f"Node {self.index}'s handshake", "here, on the client")
                self._ready_future.set_exception(error)
        else:
            structlog.get_logger().warning(
                "skyward.frame_undecodable", node=self.index, frame=repr(frame),
                error=repr(frame.payload.error),
            )

    def _fail_undecodable(self, task: TaskState, frame: Frame) -> None:
        what = {Kind.YIELD: "An item yielded by", Kind.ERROR: "The error raised by"}.get(
            frame.kind, "The return value of"
        )
        task.fail(frame.payload.explain(f"{what} {task.name}()", "here, on the client"))
        self._completed(task, False, "SerializationError")

    def _worker_failed(self, failure: RemoteFailure) -> None:
        """A failure of the worker itself rather than of a task: at start, the node's start fails;
        later (a plugin's context failed as the worker left it) it is reported as an `ErrorReported`."""
        if self._ready_future is not None and not self._ready_future.done():
            error = NodeStartError(f"node {self.index}'s worker failed to start:\n{failure.traceback}")
            self._ready_future.set_exception(error)
            return
        structlog.get_logger().warning("skyward.worker_error", node=self.index, error=failure.message)
        self.emit(ErrorReported(message=failure.message, node=self.index, pool=self.pool))

    def _finish(self, task_id: int) -> TaskState | None:
        """Free the slot of the task an answer is for, and return the task for the answer to end
        and count; None when there is nothing left to end: the pool ended it first (a time limit,
        its exit, a cancel) and counted its end then, so counting this answer too would count the
        task twice."""
        if task_id in self.stuck:
            self.stuck.discard(task_id)
            if self.waiting:
                self._start_next(self._loop.time())
            self._on_free(None)
            return None
        task = self.inflight.pop(task_id, None)
        if task is None:
            task = self.sent_now.pop(task_id, None)
            if task is not None and not task.call and not task.done:
                self.started(task)  # answered before the loop registered it: announced here, first
        if task is None:
            return None
        now = self._loop.time()
        if task.waits:  # answered before the slot it waited for was seen to free
            self._unwait(task)
        elif self.waiting:  # its slot frees for the first task waiting there
            self._start_next(now)
        # The answer as a sample of the node's pace (the window's input with its round trip). Its
        # work on the worker began when it arrived there (half a round trip after its sending) or
        # when the task before it ended (that answer came half a round trip later), whichever came
        # last, and ended half a round trip before this answer: it took `now - max(last answer,
        # sent + rtt)`. The pace is the work over the tasks (a worker sends the answers of short
        # tasks in bursts: one long interval, then none), started afresh for another function.
        # Inline: every task's path.
        if now > self._rtt_until and not self.inflight and self._ping_at is None and not self.sent_now:
            self.ping()  # idle, and not sampled for a while (see `ping`)
        interval = now - max(self._last_done, task.sent_at + (self.rtt or 0.0))
        if interval < 0.0:
            interval = 0.0
        key = task.function.key
        if key is self._pace_key or key == self._pace_key:
            self._work += interval
            self._done += 1.0
            if self._done >= PACE_TASKS * 2:  # the older half counts half as much
                self._work *= 0.5
                self._done *= 0.5
        else:
            self._work, self._done, self._pace_key = interval, 1.0, key
        self._last_done = now
        self._on_free(task)
        if task.done:
            return None
        task.report_end = None  # counted by the caller, as the worker answered (`_completed`)
        return task

    def _start_next(self, now: float) -> None:
        """A slot freed on the worker: the first task waiting there starts in it, and its time
        limit with it (a long limit is read by the deadlines' sweep from `started_at`; a short
        one has its own timer, armed now). A cancelled one takes the slot too, answered at once."""
        task = self.waiting.popleft()
        task.waits = False
        task.started_at = now
        timeout = task.timeout
        if timeout is not None and timeout < COARSE_TIMEOUT and not task.done:
            self.on_start(task)

    def _unwait(self, task: TaskState) -> None:
        task.waits = False
        with contextlib.suppress(ValueError):
            self.waiting.remove(task)

    def _completed(self, task: TaskState, success: bool, error: str = "") -> None:
        """Count `task`'s end: its worker's answer, or an end the pool gave it (`TaskState.report_end`,
        on whichever thread ended it)."""
        if success and not self._listens(TaskCompleted):
            if self._tally is not None:
                self._tally.finish(True)
            return  # a failure is built whatever listens: the console shows every failure
        self.emit(
            TaskCompleted(
                task_id=task.id, name=task.name, node=self.index, success=success,
                duration=self._loop.time() - task.started_at, error=error, pool=self.pool,
            )
        )

    def _pull(self, stream_id: int, count: int) -> None:
        """The worker wants `count` more items of an iterator argument: read them off the loop."""
        for task in self.inflight.values():
            source = task.inputs.get(stream_id)
            if source is not None:
                self._loop.run_in_executor(None, self._feed, stream_id, source, count)
                return

    def _feed(self, stream_id: int, source: Any, count: int) -> None:
        for _ in range(count):
            try:
                item = next(source)
            except StopIteration:
                self._loop.call_soon_threadsafe(self.channel.send, Kind.END, stream_id, None)
                return
            except BaseException as exc:  # noqa: BLE001 - the worker's loop re-raises it
                self._loop.call_soon_threadsafe(self.channel.send, Kind.END, stream_id, exc)
                return
            self._loop.call_soon_threadsafe(self.channel.send, Kind.ITEM, stream_id, item)

    def _log(self, stream: str, text: str) -> None:
        text = self._partial[stream] + text
        *lines, rest = text.split("\n")
        self._partial[stream] = rest
        for line in lines:
            self.emit(Log(instance=self.info, node=self.index, line=line, stream=stream, pool=self.pool))

    def flush_logs(self) -> None:
        for stream, rest in self._partial.items():
            if rest:
                self.emit(Log(instance=self.info, node=self.index, line=rest, stream=stream, pool=self.pool))
        self._partial = {"stdout": "", "stderr": ""}

    def _closed(self, exc: BaseException | None) -> None:
        self.ready = False
        if self._ready_future is not None and not self._ready_future.done():
            why = f": {exc}" if exc is not None else ""
            error = NodeStartError(f"node {self.index}'s worker exited during start{why}")
            self._ready_future.set_exception(error)
            return
        if not self.lost:
            self.lost = True
            structlog.get_logger().info("skyward.node_lost", node=self.index, error=repr(exc))
            self._on_lost(self, exc)
