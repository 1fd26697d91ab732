"""`python -m skyward.worker.sampler`: the node's metrics sampler, a small process beside the worker.

Why a process and not a thread in the worker: a task that holds the GIL (a C extension that does
not release it, or pure-Python work under `executor="thread"`) would delay a sampling thread and
skew every figure it takes; a process of its own samples on time whatever the tasks do, and its
cost is its own, measurable apart from the worker's. The worker starts it after the handshake and
relays what it prints (`skyward.worker.telemetry`).

Protocol: the first line on stdin is the plan, JSON `[[probe, name, unit, interval, arg], ...]`
(`skyward.metrics.sampling_plan`); stdin then stays open, and its end (the worker exited, however
it did) ends the sampler. Each line on stdout is one batch, JSON `[[name, value, unit, time],
...]`, all the figures due at one moment; a figure that could not be read is `[name, null, reason,
time]`, sent once per metric. A batch the worker is too busy to take (the pipe is full) is dropped
rather than waited for: a late figure is worth less than a missing one.
"""

from __future__ import annotations

import errno
import json
import os
import select
import sys
import threading
import time
from typing import Any

from skyward.worker.probes import HostProbe, gpu_reader, run_custom

HOST_PROBES = frozenset({"cpu", "memory", "memory_used", "memory_total", "disk", "network_rx", "network_tx"})
RATES = frozenset({"cpu", "network_rx", "network_tx"})
GPU_PROBES = frozenset({"gpu_utilization", "gpu_memory", "gpu_memory_total", "gpu_temp"})

Entry = tuple[str, str, str, float, str]


class Sampler:
    """Reads each planned figure when it is due and writes one batch per moment."""

    def __init__(self, plan: list[Entry], out_fd: int) -> None:
        self.out_fd = out_fd
        self.write_lock = threading.Lock()
        self.reported: set[str] = set()
        self.stop = threading.Event()
        self.host: HostProbe | None = None
        self.gpu: Any = None
        self.scheduled = [e for e in plan if e[0] != "custom"]
        self.custom = [e for e in plan if e[0] == "custom"]
        if any(e[0] in HOST_PROBES for e in plan):
            try:
                self.host = HostProbe()
            except Exception as exc:  # noqa: BLE001 - no psutil here: the other figures go on
                self.fail_all(HOST_PROBES, f"psutil does not load on the node ({type(exc).__name__}: {exc})")
        gpu_intervals = [e[3] for e in plan if e[0] in GPU_PROBES]
        if gpu_intervals:
            self.gpu = gpu_reader(min(gpu_intervals))
        if self.gpu is None:  # no GPU here: its figures are simply not sent
            self.scheduled = [e for e in self.scheduled if e[0] not in GPU_PROBES]

    def fail_all(self, probes: frozenset[str], reason: str) -> None:
        failed = [e for e in self.scheduled if e[0] in probes]
        self.scheduled = [e for e in self.scheduled if e[0] not in probes]
        self.send([[e[1], None, reason, time.time()] for e in failed])

    # -- output -----------------------------------------------------------------------------------

    def send(self, batch: list[list[Any]]) -> None:
        if not batch:
            return
        data = (json.dumps(batch, separators=(",", ":")) + "\n").encode()
        with self.write_lock:
            try:
                os.write(self.out_fd, data)
            except BlockingIOError:
                pass  # the worker has not read the last batches yet: drop this one
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    self.stop.set()  # the worker is gone

    def failed(self, name: str, exc: BaseException, now: float) -> list[Any] | None:
        """The one report of `name`'s first failure, then silence for it."""
        if name in self.reported:
            return None
        self.reported.add(name)
        return [name, None, f"{type(exc).__name__}: {exc}"[:300], now]

    # -- sampling ---------------------------------------------------------------------------------

    def sample(self, due: list[Entry]) -> list[list[Any]]:
        now = time.time()
        batch: list[list[Any]] = []
        gpu = None
        for probe, name, unit, _, arg in due:
            try:
                if probe in GPU_PROBES:
                    if gpu is None:
                        gpu = self.gpu.read() or {}
                    value = gpu.get(probe)
                else:
                    assert self.host is not None
                    value = self.host.read(probe, arg)
            except Exception as exc:  # noqa: BLE001 - reported once, the others go on
                report = self.failed(name, exc, now)
                if report is not None:
                    batch.append(report)
                continue
            if value is not None:
                batch.append([name, round(float(value), 3), unit, now])
        return batch

    def run_custom(self, entry: Entry) -> None:
        _, name, unit, interval, command = entry
        next_at = time.monotonic()
        while not self.stop.is_set():
            now = time.time()
            try:
                row = [name, run_custom(command, timeout=max(interval * 3, 10.0)), unit, now]
            except Exception as exc:  # noqa: BLE001 - reported once, tried again next time
                row = self.failed(name, exc, now)
            if row is not None:
                self.send([row])
            next_at += interval
            self.stop.wait(max(0.0, next_at - time.monotonic()))

    def run(self, stdin_fd: int) -> None:
        for entry in self.custom:
            threading.Thread(target=self.run_custom, args=(entry,), daemon=True).start()
        start = time.monotonic()
        # A rate (CPU use, bytes per second) needs an interval behind it: its first figure then.
        due_at = [start + (e[3] if e[0] in RATES else 0.0) for e in self.scheduled]
        while not self.stop.is_set():
            now = time.monotonic()
            due = [i for i, at in enumerate(due_at) if at <= now + 0.005]
            if due:
                self.send(self.sample([self.scheduled[i] for i in due]))
                for i in due:
                    interval = self.scheduled[i][3]
                    due_at[i] = max(due_at[i] + interval, now)  # behind (a suspended node): no burst
            wait = min(due_at, default=now + 3600.0) - time.monotonic()
            readable, _, _ = select.select([stdin_fd], [], [], max(0.0, wait))
            if readable and not os.read(stdin_fd, 4096):
                break  # the worker closed our stdin: it is gone
        self.stop.set()
        if self.gpu is not None:
            self.gpu.close()


def main() -> None:
    stdin_fd = sys.stdin.fileno()
    plan_line = b""
    while not plan_line.endswith(b"\n"):
        chunk = os.read(stdin_fd, 65536)
        if not chunk:
            return
        plan_line += chunk
    plan = [tuple(entry) for entry in json.loads(plan_line)]
    out_fd = sys.stdout.fileno()
    os.set_blocking(out_fd, False)
    Sampler(plan, out_fd).run(stdin_fd)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
