"""The worker's dead-man switch (`Spec.ttl`): stop when the client has been silent too long.

The client pings every `min(ttl / 3, 30)` seconds, so a live client is never silent for `ttl`.
A client that vanished without closing the connection (a laptop lid, a killed process whose
socket lingers, a network partition) leaves its workers, and on clouds its machines, running: the
watchdog leaves the `around_app` contexts, runs the provider's shutdown command (a cloud machine
powers itself off) and exits. It never writes to the channel, which may be the thing that is stuck.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable

#: The most time the cleanup (around_app exits) may take before the worker exits anyway.
CLEANUP_GRACE = 30.0


class Watchdog:
    def __init__(
        self,
        ttl: float,
        last_seen: Callable[[], float],
        cleanup: Callable[[], None],
        shutdown_command: str | None = None,
    ) -> None:
        self.ttl = float(ttl)
        self._last_seen = last_seen
        self._cleanup = cleanup
        self._shutdown_command = shutdown_command
        self._thread = threading.Thread(target=self._run, name="skyward-watchdog", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def _run(self) -> None:
        tick = min(self.ttl / 4, 1.0)
        while True:
            silent = time.monotonic() - self._last_seen()
            if silent > self.ttl:
                self.expire()
                return
            time.sleep(max(min(tick, self.ttl - silent + 0.01), 0.01))

    def expire(self) -> None:
        cleanup = threading.Thread(target=self._cleanup, name="skyward-watchdog-cleanup", daemon=True)
        cleanup.start()
        cleanup.join(CLEANUP_GRACE)
        if self._shutdown_command:
            with contextlib.suppress(Exception):  # exiting is what matters now
                subprocess.run(
                    self._shutdown_command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, timeout=60, check=False,
                )
        os._exit(0)
