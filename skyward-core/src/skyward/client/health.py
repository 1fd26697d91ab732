"""The pool's half of `sky.HealthChecker` (loop thread): check every node, count failures.

Every `interval` seconds each ready worker is sent a CHECK frame carrying the check function;
the worker runs it beside its tasks (`skyward.worker.health`) and answers with HEALTH. A falsy
answer, an exception, or no answer within `timeout` is a failure; an answer that passes resets
the count. After `failures` failures in a row the node is handed to `on_unhealthy` (which
replaces its machine: `client/preemption.py`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from skyward.wire import Kind

if TYPE_CHECKING:
    from skyward.client.fleet import Fleet
    from skyward.client.node import NodeHandle
    from skyward.health import HealthChecker


class HealthMonitor:
    def __init__(
        self, fleet: Fleet, checker: HealthChecker, on_unhealthy: Callable[[int, str], None]
    ) -> None:
        self.fleet = fleet
        self.checker = checker
        self._on_unhealthy = on_unhealthy
        #: Failures in a row, by worker key.
        self.failures: dict[int, int] = {}
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._log = structlog.get_logger()

    async def run(self) -> None:
        while not self.fleet.closing:
            await asyncio.sleep(self.checker.interval)
            handles = [h for h in self.fleet._scheduler.handles() if h.ready and not h.lost]
            answers = await asyncio.gather(*(self.check(h) for h in handles))
            for handle, (healthy, detail) in zip(handles, answers, strict=True):
                self._count(handle, bool(healthy), str(detail))

    def _count(self, handle: NodeHandle, healthy: bool, detail: str) -> None:
        if healthy or handle.lost:
            self.failures.pop(handle.key, None)
            return
        count = self.failures[handle.key] = self.failures.get(handle.key, 0) + 1
        self._log.warning(
            "skyward.health_check_failed", pool=self.fleet.name, node=handle.index, failures=count,
            detail=detail,
        )
        if count >= self.checker.failures:
            self.failures.pop(handle.key, None)
            self._on_unhealthy(handle.index, f"failed {count} health checks in a row (last: {detail})")

    async def check(self, handle: NodeHandle) -> tuple[bool, str]:
        """One check on `handle`'s worker: `(healthy, detail)`."""
        check_id = next(self._ids)
        answer = asyncio.get_running_loop().create_future()
        self._waiting[check_id] = answer
        handle.on_health = self._answer
        try:
            handle.channel.send(Kind.CHECK, check_id, self.checker.check)
            return await asyncio.wait_for(answer, self.checker.timeout)
        except TimeoutError:
            return False, f"no answer within {self.checker.timeout:g} s"
        except Exception as exc:  # noqa: BLE001 - a channel that cannot carry the check
            return False, f"the check could not be sent: {exc}"
        finally:
            self._waiting.pop(check_id, None)

    def _answer(self, check_id: int, payload: Any) -> None:
        answer = self._waiting.get(check_id)
        if answer is not None and not answer.done():
            answer.set_result(tuple(payload))
