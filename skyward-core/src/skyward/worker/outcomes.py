"""How a task's outcome goes back to the client: after what it printed, in bursts, or on the reply lane.

Kept apart from running the task (`worker/running.py`) because the way back has rules of its own: an
outcome is encoded on the task's thread (a result that cannot be pickled fails there, as the task's
error); what the task printed and wrote to collections goes first; outcomes of tasks the reader ran
back to back leave together in one write; a CALL's answer goes to the reply lane where its caller
waits, unless the task wrote on the main channel meanwhile. `Outcomes` is a mixin of `Worker`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from skyward.errors import SerializationError
from skyward.messages import RemoteFailure, TaskMessage
from skyward.wire import Kind, encode

if TYPE_CHECKING:
    from skyward.collections.transport import ChannelClient
    from skyward.worker.capture import OutputPump
    from skyward.worker.channel import WorkerChannel
    from skyward.worker.running import Running
    from skyward.worker.streams import OutputCredits
    from skyward.worker.threads import TaskThreads


class Outcomes:
    """Send results, errors and a generator's items (the answering half of `Worker`)."""

    # The worker's state these methods work on (set in `Worker.__init__`).
    channel: WorkerChannel
    pump: OutputPump
    threads: TaskThreads
    collections: ChannelClient
    running: dict[int, Running]
    #: Outcomes of tasks the reader ran back to back, sent together with the last one whose frames
    #: were read in the same read (or when a task runs long, or the reader is about to wait): one
    #: write and one client wake-up for a burst of tasks.
    held: list[Any]
    held_lock: threading.Lock

    def reply(self, task_id: int, msg: TaskMessage, result: Any) -> None:
        try:
            self.deliver(Kind.RESULT, task_id, result)
        except Exception as exc:  # noqa: BLE001 - the result could not be pickled
            error = SerializationError(
                f"The return value of {msg.name}() ({type(result).__name__}) cannot be pickled: {exc}. "
                "Return plain data (numbers, arrays, dicts) instead."
            )
            self.deliver(Kind.ERROR, task_id, RemoteFailure.capture(error))

    def deliver(self, kind: Kind, task_id: int, payload: Any) -> None:
        """Send a task's outcome after what it printed; the reader's outcomes may be held a little.

        Encoding happens here, on the task's thread, so a result that cannot be pickled fails
        here. The reader holds an outcome while frames it has read already wait behind it: the
        held outcomes leave with the last task of the burst, or at the next flush (the reader
        about to wait for the client, or running a task longer than a tick). A lone task's
        outcome leaves at once, before the reader's own bookkeeping (~4% of a no-op's round trip
        over SSH, A/B on loopback hosts).
        """
        self.collections.before_outcome(task_id)  # what the task wrote to collections goes first
        parts = self.channel.encode(kind, task_id, payload)
        state = self.running.get(task_id)
        if state is not None and state.call:
            self.answer_call(task_id, parts, state)
            return
        if self.threads.on_reader():
            with self.held_lock:
                self.held.extend(parts)
                if self.channel.more_to_read():
                    return  # a burst: this outcome leaves with the next ones, in one write
                parts, self.held = self.held, []
            # The last of a burst, or a lone task: sent now, before the reader's own bookkeeping
            # (its slot, the next read), which then overlaps the answer's way to the client.
            self.pump.drain()
            self.channel.send_parts(parts)
            return
        self.flush_held()
        self.pump.drain()
        self.channel.send_parts(parts)

    def answer_call(self, task_id: int, parts: list[Any], state: Running) -> None:
        """A CALL's answer goes to the reply lane, where its caller waits, unless the task wrote
        on the main channel meanwhile (it printed): then the answer follows that output there, and
        the lane says so, so the caller never has a result before the output that came first."""
        self.pump.drain()
        if self.channel.writes == state.writes and self.channel.send_reply(parts):
            return
        self.channel.send_parts(parts)
        self.channel.send_reply(encode(Kind.ELSEWHERE, task_id))

    def flush_held(self) -> None:
        with self.held_lock:
            held, self.held = self.held, []
        if held:
            self.pump.drain()
            self.channel.send_parts(held)

    def pump_generator(self, task_id: int, msg: TaskMessage, gen: Any, credits: OutputCredits) -> None:
        try:
            for item in gen:
                if not credits.take():
                    break
                self.pump.drain()
                try:
                    self.channel.send(Kind.YIELD, task_id, item)
                except Exception as exc:  # noqa: BLE001
                    raise SerializationError(
                        f"An item yielded by {msg.name}() ({type(item).__name__}) cannot be pickled: {exc}"
                    ) from exc
        finally:
            close = getattr(gen, "close", None)
            if close is not None:
                close()
        self.pump.drain()
        self.collections.before_outcome(task_id)
        self.channel.send(Kind.DONE, task_id, credits.cancelled)
