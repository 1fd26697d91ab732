"""How many tasks a node holds at once: the adaptive window's sizes and the estimators' settings.

A node (`client/node.py`) measures its round trip (PING/PONG while idle, a min filter over
`RTT_EPOCH`s) and its pace (seconds per task while kept busy, over `PACE_TASKS` answers);
`window_size` turns the two into how many tasks it may hold, as TCP sizes its window. The
scheduler (`client/scheduler.py`) bounds that by the node's fair share of the work left.
"""

from __future__ import annotations

import math

__all__ = [
    "PACE_TASKS", "PREFETCH_HORIZON", "PREFETCH_MAX", "RTT_EPOCH", "WINDOW_MAX", "WINDOW_MIN_RATIO",
    "window_size",
]

#: A node that is finishing short tasks one after another is sent more tasks of a `map` than its
#: slots: as many as it finishes in about this long. A map of short tasks then never waits for a
#: round trip, while no task waits behind more than this much queued work.
PREFETCH_HORIZON = 0.005
#: The most tasks a node holds beyond its slots.
PREFETCH_MAX = 64
#: The most tasks the adaptive window (`window_size`) sends a node beyond its running slots.
WINDOW_MAX = 64
#: Below this round trip to service time ratio the window sends nothing ahead: keeping a task
#: waiting on a worker then gains under an eighth of a task each time, and may cost a whole task
#: at the end of a map (that task waits there while another node has nothing to do).
WINDOW_MIN_RATIO = 0.125
#: The pace is measured over the last this many to twice as many answers.
PACE_TASKS = 16
#: The round trip is the least seen over the last one or two of these periods (as TCP's min RTT
#: filter): queueing only adds to a sample, and a route that got slower is seen within two.
RTT_EPOCH = 10.0


def window_size(concurrency: int, rtt: float | None, pace: float | None, maximum: int = WINDOW_MAX) -> int:
    """How many tasks a node may hold at once to cover its round trip, as TCP sizes its window.

    `pace`: the node's time per task while it is kept busy (its service time over its running
    slots); `rtt`: its round trip. A node that finishes a task every `pace` seconds needs
    `rtt / pace` more on their way or waiting for it, besides the `concurrency` it runs, so it
    never idles waiting for the next one: `concurrency + ceil(rtt / pace)`, at most `maximum`
    beyond `concurrency`. Without both estimates, or with a round trip under `WINDOW_MIN_RATIO`
    of a task, just `concurrency`.
    """
    if rtt is None or pace is None:
        return concurrency
    if rtt < pace * WINDOW_MIN_RATIO:
        return concurrency
    return concurrency + min(maximum, math.ceil(rtt / max(pace, 1e-7)))
