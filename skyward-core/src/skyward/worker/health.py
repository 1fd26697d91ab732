"""The worker's half of `sky.HealthChecker`: run a check beside the tasks and answer with HEALTH.

A CHECK frame carries the check function (cloudpickled by the client each time: checks are
seconds apart, and a worker then holds nothing between them). It runs in a daemon thread of its
own, never in a task slot, so a node busy with a long task still answers; a check that hangs is
the client's to time out (its thread is left behind: Python cannot stop it, and the node is
replaced anyway after enough failures). The answer is `(healthy, detail)`: a falsy return or an
exception is unhealthy, and `detail` says which, for the event the client emits.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from skyward.wire import Kind


def run_check(send: Any, check_id: int, check: Any) -> None:
    """Start `check()` in its own thread; its answer goes out through `send(kind, id, payload)`."""
    thread = threading.Thread(
        target=_answer, args=(send, check_id, check), name=f"skyward-health-{check_id}", daemon=True
    )
    thread.start()


def _answer(send: Any, check_id: int, check: Any) -> None:
    try:
        value = check()
        answer = (True, "") if value else (False, f"the check returned {value!r}")
    except BaseException as exc:  # noqa: BLE001 - an exception is an unhealthy answer, not a crash
        answer = (False, f"the check raised {type(exc).__name__}: {exc}")
    with contextlib.suppress(OSError):  # the client is gone: nobody to tell
        send(Kind.HEALTH, check_id, answer)
