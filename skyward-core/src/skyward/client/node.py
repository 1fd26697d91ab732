"""One node as the client sees it: its channel, its in-flight tasks, and the sending of them.

A node counts each task it announces (`started`) and the end its worker answers (`_completed`);
a task it announces is marked (`TaskState.report_end`) until that end is counted, so an end the
pool gives it another way (a time limit, a lost node, the pool's exit) is counted here too, and a
marked task announced again is a retry of the same task, not a new one (`TaskTally.rerun`).
What the worker's frames do to the handle is `client/node_frames.py`'s; its round trip and pace,
the window's inputs, are `client/node_timing.py`'s.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from skyward.client.node_frames import NodeFrames, NodeStartError
from skyward.client.node_timing import NodeTiming
from skyward.client.shipping import FunctionLedger
from skyward.observe.events import TaskStarted
from skyward.payload import Undecodable
from skyward.wire import Frame, Kind, as_kind

if TYPE_CHECKING:
    from skyward.client.tasks import TaskState
    from skyward.observe.tally import TaskTally
    from skyward.providers.base import Instance
    from skyward.task.instance import InstanceInfo
    from skyward.transport.base import Channel


class NodeHandle(NodeFrames):
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
        self.index, self.instance, self.info, self.channel = index, instance, info, channel
        #: The scheduler's key: the global worker index (the node index with one worker per node).
        self.key = index if key is None else key
        #: Tasks that run at once on the worker (`Worker.concurrency`).
        self.capacity = capacity
        #: `Worker(buffer=N)` given: the node holds at most `capacity + N` tasks, whatever its round
        #: trip. None: the adaptive window (`NodeTiming.window`).
        self.fixed_window = fixed_window
        #: The round trip and the pace the adaptive window is sized from.
        self.timing = NodeTiming()
        #: Tasks in flight that the loop registered; those written from a caller's thread that it
        #: has not registered yet (`send_now`); those past their time limit, told to stop (`abandon`).
        self.inflight: dict[int, TaskState] = {}
        self.sent_now: dict[int, TaskState] = {}
        self.stuck: set[int] = set()
        #: Tasks sent beyond the running slots, waiting on the worker in the order it runs them.
        self.waiting: deque[TaskState] = deque()
        #: Takes no new task: a stuck task waits for the others to finish before its worker is
        #: replaced (see `Deadlines.check_stuck`).
        self.draining = False
        self.ready = self.lost = False
        #: The functions the worker holds, and the lock every write of a task to it takes.
        self.functions = FunctionLedger()
        #: Where a lone synchronous call's answer comes straight to its caller (Local pipes).
        self.lane: Any = None
        self._loop = asyncio.get_running_loop()
        self._ready_future: asyncio.Future[Any] | None = None
        self._partial = {"stdout": "", "stderr": ""}  # each stream's line not ended yet
        # Where the node reports: events (built only for a listener: `listens`), the pool's name
        # on each, and the count a task nobody wants the events of goes to (`EventBus.tally`).
        self.emit, self._listens, self.pool, self._tally = emit, listens, pool, tally
        self._on_lost, self._on_free = on_lost, on_free
        #: What each task this node announces counts its end with (`TaskState.report_end`): one
        #: bound method for them all, not one built per task.
        self._report_end = self._completed
        #: Called with a waiting task when it takes a freed slot (its time limit starts then).
        self.on_start: Callable[[TaskState], Any] = lambda task: None
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
        self.timing.last_done = self._loop.time()  # idle from now (see idle_for)
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
        if self.timing.ping_at is None and not (self.inflight or self.sent_now or self.stuck):
            self.timing.ping_at = self._loop.time()
        self.channel.send(Kind.PING)

    @property
    def rtt(self) -> float | None:
        """The node's round trip (seconds, see `NodeTiming.rtt`); None until the first."""
        return self.timing.rtt

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
        return self.timing.window(self.capacity, key)

    @property
    def pace(self) -> float | None:
        """Seconds per task while this node is kept busy, on the function it ran last (the round
        trip taken out, see `NodeTiming.answered`); None before its first answer."""
        return self.timing.pace

    def idle_for(self, now: float) -> float:
        """Seconds this node has had nothing to run (0 while it runs a task): an elastic pool
        gives back nodes that idle long enough (`Options.autoscale_idle_timeout`)."""
        if self.inflight or self.sent_now or self.stuck or not self.ready:
            return 0.0
        return now - self.timing.last_done

    def prefetch(self, key: bytes | None = None) -> int:
        """Tasks of a `map` this node may hold beyond its slots (see `PREFETCH_HORIZON`).

        None unless it finished a task within the horizon and its oldest task is younger than
        that: a long task, or a node that was idle, gets no more than its slots; with `key`, none
        unless its pace was measured on that function.
        """
        if self.stuck:
            return 0
        oldest = next(iter(self.inflight.values())).started_at if self.inflight else None
        return self.timing.prefetch(self._loop.time(), key, oldest)

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

    # -- its end --------------------------------------------------------------------------------------

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
