"""`sky.metrics`: what each node measures about itself while a pool runs, and how often.

    sky.Image(metrics=[sky.metrics.CPU(interval=1.0), sky.metrics.GPU(), sky.metrics.Disk("/data")])
    sky.Image(metrics=sky.metrics.Default())       # the default set (what `Image()` collects)
    sky.Image(metrics=None)                        # nothing sampled, no sampler process

A collector is a frozen value: what to read and every how many seconds. The pool hands the list to
each worker, whose sampler (`skyward.worker.sampler`, a process of its own beside the worker)
reads it on schedule and sends the samples to the client in batches, where each becomes a
`sky.Metric` event (`name`, `value`, `unit`, the node's `instance`). Host figures come from
psutil, GPU figures from NVML (nvidia-ml-py) or `nvidia-smi`; a node without a GPU sends no GPU
metrics. GPU figures are the node's: utilisation is the mean over its GPUs, memory the sum, the
temperature the hottest.

Nothing here samples anything: this module only describes, so it stands with the other values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from skyward.errors import ConfigurationError

__all__ = [
    "CPU", "GPU", "Collector", "Custom", "Default", "Disk", "GPUMemory", "GPUMemoryTotal", "GPUTemp",
    "Memory", "MemoryTotal", "MemoryUsed", "NetworkRx", "NetworkTx", "resolve", "sampling_plan",
]

#: Sampling faster than this tells nothing a person or a handler can use, and costs CPU on the node.
MIN_INTERVAL = 0.1


def _check_interval(instance: Any, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < MIN_INTERVAL:
        raise ConfigurationError(
            f"sky.metrics.{type(instance).__name__}(interval={value!r}): must be a number of seconds "
            f"of at least {MIN_INTERVAL}; pass e.g. interval=2.0"
        )


def _interval(default: float) -> Any:
    return attrs.field(default=default, validator=_check_interval, converter=_as_float, kw_only=True)


def _as_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


@attrs.frozen
class Collector:
    """One figure a node samples every `interval` seconds. `name` and `unit` are those of the
    `sky.Metric` events it makes; `probe` says what the sampler reads, `arg` its argument."""

    interval: float = _interval(2.0)

    probe = ""
    unit = ""

    @property
    def name(self) -> str:
        return self.probe

    @property
    def arg(self) -> str:
        return ""

    def plan(self) -> tuple[str, str, str, float, str]:
        """What the node's sampler is told: plain data, so it needs nothing of ours to read it."""
        return (self.probe, self.name, self.unit, float(self.interval), self.arg)


@attrs.frozen
class CPU(Collector):
    """Host CPU use, % of all cores."""

    probe = "cpu"
    unit = "%"


@attrs.frozen
class Memory(Collector):
    """Host memory in use, % of the total."""

    probe = "memory"
    unit = "%"


@attrs.frozen
class MemoryUsed(Collector):
    """Host memory in use (total less available), in GB."""

    probe = "memory_used"
    unit = "GB"


@attrs.frozen
class MemoryTotal(Collector):
    """Host memory, in GB (it does not change: sampled rarely)."""

    interval: float = _interval(60.0)
    probe = "memory_total"
    unit = "GB"


@attrs.frozen
class GPU(Collector):
    """GPU utilisation, %: the mean over the node's GPUs."""

    probe = "gpu_utilization"
    unit = "%"


@attrs.frozen
class GPUMemory(Collector):
    """GPU memory in use, in MB, summed over the node's GPUs."""

    probe = "gpu_memory"
    unit = "MB"


@attrs.frozen
class GPUMemoryTotal(Collector):
    """GPU memory, in MB, summed over the node's GPUs (it does not change: sampled rarely)."""

    interval: float = _interval(60.0)
    probe = "gpu_memory_total"
    unit = "MB"


@attrs.frozen
class GPUTemp(Collector):
    """The hottest GPU's temperature, in degrees Celsius."""

    interval: float = _interval(5.0)
    probe = "gpu_temp"
    unit = "C"


@attrs.frozen
class Disk(Collector):
    """The filesystem holding `path`, % used; the metric is named `disk:<path>`."""

    path: str = attrs.field(default="/")
    interval: float = _interval(10.0)
    probe = "disk"
    unit = "%"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path.startswith("/"):
            raise ConfigurationError(
                f"sky.metrics.Disk({self.path!r}): pass an absolute path on the node, e.g. Disk('/data')"
            )

    @property
    def name(self) -> str:
        return f"disk:{self.path}"

    @property
    def arg(self) -> str:
        return self.path


@attrs.frozen
class NetworkRx(Collector):
    """Bytes received per second, over every interface but loopback."""

    probe = "network_rx"
    unit = "B/s"


@attrs.frozen
class NetworkTx(Collector):
    """Bytes sent per second, over every interface but loopback."""

    probe = "network_tx"
    unit = "B/s"


@attrs.frozen
class Custom(Collector):
    """A shell `command` run on the node every `interval` seconds; the last number it prints is
    the value of the metric `name` (`unit` as given). A command that fails is reported once, as a
    non-fatal `sky.ErrorReported` naming the metric, and tried again at the next interval."""

    name: str = attrs.field()  # type: ignore[assignment]
    command: str = attrs.field()
    interval: float = attrs.field(default=3.0, validator=_check_interval, converter=_as_float)
    unit: str = attrs.field(default="", kw_only=True)  # type: ignore[misc]
    probe = "custom"

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigurationError(
                "sky.metrics.Custom(name, command): give the metric a name, e.g. "
                "Custom('queue_depth', 'cat /tmp/queue | wc -l')"
            )
        if not isinstance(self.command, str) or not self.command.strip():
            raise ConfigurationError(
                f"sky.metrics.Custom({self.name!r}, command): give the shell command that prints its value"
            )

    @property
    def arg(self) -> str:
        return self.command


@attrs.frozen(init=False)
class Default:
    """The default set (CPU, memory, GPU utilisation, GPU memory and its total, GPU temperature),
    plus `extra` collectors; `interval=` sets every one of their intervals at once."""

    collectors: tuple[Collector, ...]

    def __init__(self, *extra: Collector, interval: float | None = None) -> None:
        base: list[Collector] = [CPU(), Memory(), GPU(), GPUMemory(), GPUMemoryTotal(), GPUTemp()]
        chosen = [*base, *_checked(extra)]
        if interval is not None:
            chosen = [attrs.evolve(c, interval=interval) for c in chosen]
        self.__attrs_init__(tuple(chosen))  # type: ignore[attr-defined]

    def __iter__(self) -> Iterator[Collector]:
        return iter(self.collectors)


def _checked(items: Iterable[Any]) -> list[Collector]:
    chosen: list[Collector] = []
    for item in items:
        if isinstance(item, Default):
            chosen.extend(item.collectors)
        elif isinstance(item, Collector):
            chosen.append(item)
        else:
            raise ConfigurationError(
                f"Image(metrics=...): {item!r} is not a metric; pass sky.metrics collectors, e.g. "
                "[sky.metrics.CPU(), sky.metrics.Disk('/data')], sky.metrics.Default() or None"
            )
    return chosen


def resolve(value: Any) -> tuple[Collector, ...]:
    """`Image.metrics` as collectors: None for none, "default" or `Default()` for the default set,
    a collector or a list of them as given (a name sampled twice keeps its first collector)."""
    if value is None or value is False:
        return ()
    if value == "default":
        return Default().collectors
    if isinstance(value, Default | Collector):
        value = [value]
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(
            f"Image(metrics={value!r}): pass a list of sky.metrics collectors, sky.metrics.Default() or None"
        )
    seen: dict[str, Collector] = {}
    for collector in _checked(value):
        seen.setdefault(collector.name, collector)
    return tuple(seen.values())


def sampling_plan(value: Any) -> tuple[tuple[str, str, str, float, str], ...]:
    """What a node's sampler is told for `Image.metrics`: (probe, name, unit, interval, arg) each."""
    return tuple(collector.plan() for collector in resolve(value))
