"""A node's measured round trip and pace: the inputs of its adaptive window and its prefetch.

Kept apart from the node handle (`client/node.py`) because the two estimators are arithmetic on
a clock the handle hands in, nothing else: the handle decides when a sample is taken (a PONG seen
while it held no task, an answer), this object what the samples add up to (`client/window.py`
says why each estimator is built as it is).
"""

from __future__ import annotations

import attrs

from skyward.client.window import PACE_TASKS, PREFETCH_HORIZON, PREFETCH_MAX, RTT_EPOCH, window_size


@attrs.define(slots=True)
class NodeTiming:
    """The round trip (`rtt`, a min filter over `RTT_EPOCH`s) and the pace (seconds of work over
    the tasks they were spent on, for the function `key`) of one node."""

    #: The node's round trip (seconds): the least PING/PONG round trip of the last two `RTT_EPOCH`s;
    #: None until the first.
    rtt: float | None = None
    #: The least sample of this period and of the one before, and when this period ends.
    least: float = float("inf")
    before: float = float("inf")
    until: float = float("-inf")
    #: When the PING in flight that counts as a sample was sent (one at a time; see `NodeHandle.ping`).
    ping_at: float | None = None
    #: Seconds of work over the tasks they were spent on, over the last `PACE_TASKS` to twice that
    #: many answers, for the function `key`; and when the last answer came.
    work: float = 0.0
    done: float = 0.0
    key: bytes | None = None
    last_done: float = 0.0

    def pong(self, now: float) -> None:
        """The PONG to the sampling PING came: a round trip sample."""
        if self.ping_at is not None:
            self.sample(now - self.ping_at, now)
            self.ping_at = None

    def sample(self, sample: float, now: float) -> None:
        """A round trip seen: `rtt` is the least of this sample's `RTT_EPOCH` and the one before
        (as TCP's min RTT filter: a slower route is seen within two)."""
        if now > self.until:  # a new period
            self.before, self.least = self.least, sample
            self.until = now + RTT_EPOCH
        elif sample < self.least:
            self.least = sample
        self.rtt = min(self.before, self.least)

    def answered(self, now: float, sent_at: float, key: bytes) -> None:
        """An answer to a task of the function `key`, sent at `sent_at`, as a sample of the pace.

        Its work on the worker began when it arrived there (half a round trip after its sending)
        or when the task before it ended (that answer came half a round trip later), whichever
        came last, and ended half a round trip before this answer: it took `now - max(last
        answer, sent + rtt)`. The pace is the work over the tasks (a worker sends the answers of
        short tasks in bursts: one long interval, then none), started afresh for another function.
        """
        interval = now - max(self.last_done, sent_at + (self.rtt or 0.0))
        if interval < 0.0:
            interval = 0.0
        if key is self.key or key == self.key:
            self.work += interval
            self.done += 1.0
            if self.done >= PACE_TASKS * 2:  # the older half counts half as much
                self.work *= 0.5
                self.done *= 0.5
        else:
            self.work, self.done, self.key = interval, 1.0, key
        self.last_done = now

    @property
    def pace(self) -> float | None:
        """Seconds per task while the node is kept busy, on the function it ran last."""
        return self.work / self.done if self.done else None

    def window(self, capacity: int, key: bytes) -> int:
        """`window_size` from the round trip and the pace on `key` (only that function's: another
        function's pace says nothing of this one's)."""
        if key != self.key:
            return capacity
        return window_size(capacity, self.rtt, self.work / self.done)

    def prefetch(self, now: float, key: bytes | None, oldest: float | None) -> int:
        """Tasks of a `map` the node may hold beyond its slots (see `PREFETCH_HORIZON`): none
        unless it answered within the horizon and its oldest task (started at `oldest`) is younger
        than that; with `key`, none unless the pace was measured on that function."""
        if not self.done:
            return 0
        if key is not None and key != self.key:
            return 0
        if now - self.last_done > PREFETCH_HORIZON:
            return 0
        if oldest is not None and now - oldest > PREFETCH_HORIZON:
            return 0
        return min(PREFETCH_MAX, int(PREFETCH_HORIZON / max(self.work / self.done, 1e-6)))
