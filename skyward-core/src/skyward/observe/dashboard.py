"""What the console shows of the nodes' metrics: live rows, a periodic log line, an end summary.

`Meters` keeps, per node, the latest figure of each metric, a short history of the utilisation
figures (for a sparkline) and running sums (for the summary). It is fed `sky.Metric` events and
read by the console (`observe/console.py`), which draws it: rich mode as one compact row per node
under the spinner line, log mode as one line per node every `LOG_EVERY` seconds, every mode but
"silent" as a summary when the pool is destroyed.
"""

from __future__ import annotations

from collections import deque

import attrs

from skyward.observe.events import Metric

__all__ = ["LOG_EVERY", "Meters", "format_duration", "sparkline"]

#: Seconds between two metric lines of one node in the log console: a person reading a log
#: wants the trend, not every sample.
LOG_EVERY = 30.0
#: Samples kept for a sparkline.
HISTORY = 12
_BLOCKS = "▁▂▃▄▅▆▇█"
#: The utilisation figures: drawn as sparklines, averaged in the summary.
_SHOWN = (("cpu", "cpu"), ("memory", "mem"), ("gpu_utilization", "gpu"))


def format_duration(seconds: float) -> str:
    """`4.2s`, `3m 07s`, `1h 02m`: short enough for a status line, precise where it matters."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def sparkline(values: list[float], top: float = 100.0) -> str:
    """`▁▃▅█`: each value as a block, 0 to `top`."""
    last = len(_BLOCKS) - 1
    return "".join(_BLOCKS[max(0, min(last, round(v / top * last)))] for v in values)


@attrs.define
class _Node:
    latest: dict[str, tuple[float, str]] = attrs.field(factory=dict)
    history: dict[str, deque[float]] = attrs.field(factory=dict)
    #: name -> [sum, count, max]
    totals: dict[str, list[float]] = attrs.field(factory=dict)
    #: When the last batch was taken (its samples share the time), and when a log line was written.
    batch_time: float = 0.0
    logged_at: float = 0.0


class Meters:
    def __init__(self) -> None:
        self.nodes: dict[int, _Node] = {}

    def opens(self, event: Metric) -> bool:
        """Whether `event` opens a new batch of its node: the last batch is then whole."""
        node = self.nodes.get(event.node)
        return node is not None and bool(node.latest) and event.time != node.batch_time

    def record(self, event: Metric) -> None:
        """Keep `event`'s figure: the latest of its name, its history, its running sums."""
        node = self.nodes.setdefault(event.node, _Node())
        node.batch_time = event.time
        node.latest[event.name] = (event.value, event.unit)
        if any(event.name == name for name, _ in _SHOWN):
            node.history.setdefault(event.name, deque(maxlen=HISTORY)).append(event.value)
        total = node.totals.setdefault(event.name, [0.0, 0, event.value])
        total[0] += event.value
        total[1] += 1
        total[2] = max(total[2], event.value)

    def due_for_log(self, node: int, now: float) -> bool:
        """Whether node `node`'s figures should be written to the log now (at most every `LOG_EVERY`)."""
        meters = self.nodes.get(node)
        if meters is None or now - meters.logged_at < LOG_EVERY:
            return False
        meters.logged_at = now
        return True

    def line(self, node: int) -> str:
        """`node 0: cpu 87%, memory 45%, gpu_utilization 60%, gpu_memory 12000MB`: the latest figures."""
        meters = self.nodes[node]
        figures = ", ".join(f"{name} {_figure(v, unit)}" for name, (v, unit) in sorted(meters.latest.items()))
        return f"node {node}: {figures}"

    def rows(self, limit: int = 8) -> list[str]:
        """One compact row per node for the live display (`node 0  cpu ▂▅█ 87%  mem ▃▃▃ 40%`), the
        first `limit` nodes' (a terminal is only so tall), then how many more there are."""
        rows: list[str] = []
        for index, meters in sorted(self.nodes.items()):
            parts = []
            for name, label in _SHOWN:
                history = meters.history.get(name)
                if history:
                    parts.append(f"{label} {sparkline(list(history)):<{HISTORY}} {history[-1]:3.0f}%")
            used, total = meters.latest.get("gpu_memory"), meters.latest.get("gpu_memory_total")
            if used is not None and total is not None and total[0]:
                parts.append(f"vram {used[0] / 1024:.1f}/{total[0] / 1024:.0f} GB")
            if parts:
                rows.append(f"node {index}  " + "  ".join(parts))
        if len(rows) > limit:
            rows[limit:] = [f"... and {len(rows) - limit} more node(s)"]
        return rows

    def summary(self) -> list[str]:
        """Per node, the mean (and peak) of each utilisation figure over the pool's life."""
        lines = []
        for index, meters in sorted(self.nodes.items()):
            parts = []
            for name, label in _SHOWN:
                total = meters.totals.get(name)
                if total and total[1]:
                    parts.append(f"{label} {total[0] / total[1]:.0f}% avg, {total[2]:.0f}% peak")
            if parts:
                lines.append(f"node {index}: " + "; ".join(parts))
        return lines


def _figure(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "B/s":
        return f"{value / 1e6:.2f} MB/s"
    number = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{number}{unit}" if unit in ("%", "C") else f"{number} {unit}".rstrip()
