"""Ending a task for sure: cancelled again until it has ended.

On Python 3.11 `asyncio.wait_for` loses a cancellation that arrives as its inner future completes
(the inner result wins, CPython gh-86296, fixed in 3.12): a task cancelled at that moment goes on
to its next await as if nothing happened. A pool that cancels its autoscaler's resize or a node
replacement at exit, then waits for it, would then wait on whatever that task awaits next (a
machine's release, a worker's start), possibly for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

#: How often a task that swallowed its cancellation is cancelled again.
RECANCEL_EVERY = 0.05


async def cancel_and_wait(tasks: Iterable[asyncio.Future[object]]) -> None:
    """Cancel `tasks` and wait until each has ended, cancelling again any that went on; what they
    raised is taken (as `gather(..., return_exceptions=True)` would), not left unretrieved."""
    tasks = list(tasks)
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_EVERY)
    for task in tasks:
        if not task.cancelled():
            task.exception()
