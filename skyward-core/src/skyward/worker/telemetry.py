"""The worker's end of metrics: start the node's sampler and relay its batches to the client.

The sampler is a process of its own (`skyward.worker.sampler` says why); here one daemon thread
starts it after the handshake, so a pool's start never waits for it, then reads its batches
(blocked in `read`, off the GIL, between them) and sends each as one METRICS frame through the
worker's channel, whose lock keeps it whole among the tasks' frames. The sampler's stdin is a pipe
only this process holds: when the worker ends, however it ends, the sampler reads its end and exits.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from skyward.wire import Kind

Send = Callable[[Kind, int, Any], None]


def start(send: Send, plan: tuple[tuple[Any, ...], ...]) -> threading.Thread | None:
    """Sample `plan` (`skyward.metrics.sampling_plan`) on this node from now on; None when empty."""
    if not plan:
        return None
    thread = threading.Thread(target=_relay, args=(send, plan), name="skyward-metrics", daemon=True)
    thread.start()
    return thread


def _relay(send: Send, plan: tuple[tuple[Any, ...], ...]) -> None:
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skyward.worker.sampler"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
        )
    except OSError as exc:
        _report(send, plan, f"the metrics sampler could not start: {exc}")
        return
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps([list(entry) for entry in plan]).encode() + b"\n")
        proc.stdin.flush()
    except OSError:
        return
    # The write end stays open in this process alone (close_fds): the sampler sees EOF when we exit.
    for line in proc.stdout:
        try:
            batch = [tuple(row) for row in json.loads(line)]
        except ValueError:
            continue
        try:
            send(Kind.METRICS, 0, batch)
        except OSError:
            break  # the client is gone
    with contextlib.suppress(OSError):
        proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1)
    if proc.returncode and proc.returncode > 0:  # it failed, not stopped with the worker: say why
        assert proc.stderr is not None
        with contextlib.suppress(OSError, ValueError):
            tail = proc.stderr.read(65536).decode(errors="replace").strip().splitlines()[-1:] or [""]
            _report(send, plan, f"the metrics sampler exited with status {proc.returncode}: {tail[0][:300]}")


def _report(send: Send, plan: tuple[tuple[Any, ...], ...], reason: str) -> None:
    """One failure row (under the first metric's name): the client reports it as a non-fatal error."""
    now = time.time()
    with contextlib.suppress(OSError):
        send(Kind.METRICS, 0, [(entry[1], None, reason, now) for entry in plan[:1]])

