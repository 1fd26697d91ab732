"""How a pool behaves, as opposed to what it provisions: ``Options``, ``Worker``, ``LogConfig``.

A ``Spec`` says which machines; ``Options`` says how patient, how chatty and how parallel the pool
is with them. Keeping the two apart lets several specs (multi-provider fallback) share one set of
operational knobs. Like specs, options are validated at construction and are plain, picklable
values (``health_checker``'s check is pickled with cloudpickle).
"""

from __future__ import annotations

import re
from typing import Any, Literal

import attrs

from skyward.dataclass_view import dataclass_view
from skyward.errors import ConfigurationError
from skyward.health import HealthChecker

__all__ = [
    "CONSOLE_MODES",
    "ConsoleMode",
    "Executor",
    "LogConfig",
    "Options",
    "Selection",
    "SelectionStrategy",
    "Worker",
    "WorkerExecutor",
]

Executor = Literal["auto", "thread", "process"]
Selection = Literal["cheapest", "first"]
ConsoleMode = Literal["rich", "minimal", "log", "silent"]
#: The same under their public names, `sky.WorkerExecutor` (`Worker(executor=...)`) and
#: `sky.SelectionStrategy` (`Options(selection=...)`), for annotating code that passes one on.
WorkerExecutor = Executor
SelectionStrategy = Selection

EXECUTORS: tuple[str, ...] = ("auto", "thread", "process")
SELECTIONS: tuple[str, ...] = ("cheapest", "first")
CONSOLE_MODES: tuple[str, ...] = ("rich", "minimal", "log", "silent")
LOG_LEVELS: tuple[str, ...] = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# The units skyward.observe.logging's file handler understands; sizes are binary multiples ("50 MB" = 50 MiB).
_SIZE_UNITS = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
_INTERVAL_UNITS = {
    "S": 1, "SEC": 1, "SECOND": 1,
    "M": 60, "MIN": 60, "MINUTE": 60,
    "H": 3_600, "HOUR": 3_600,
    "D": 86_400, "DAY": 86_400,
    "W": 604_800, "WEEK": 604_800,
}  # fmt: skip
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$")


def _rotation_unit(rotation: str) -> tuple[float, str] | None:
    """``"50 MB"`` -> ``(50.0, "MB")``; ``"12 hours"`` -> ``(12.0, "HOUR")``; ``None`` if unreadable."""
    match = _AMOUNT.match(rotation)
    if not match:
        return None
    unit = match[2].upper()
    if unit not in _SIZE_UNITS and unit not in _INTERVAL_UNITS and unit.endswith("S"):
        unit = unit[:-1]  # plural of a time unit: "days", "hours"
    if unit in _SIZE_UNITS or unit in _INTERVAL_UNITS:
        return float(match[1]), unit
    return None


def _number(
    owner: str, *, minimum: float, strict: bool, integer: bool = False, optional: bool = False, example: str
) -> Any:
    """An attrs validator for a count or duration: a number (not a bool) above/at ``minimum``."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None and optional:
            return
        kinds = (int,) if integer else (int, float)
        too_small = isinstance(value, kinds) and (value <= minimum if strict else value < minimum)
        if isinstance(value, bool) or not isinstance(value, kinds) or too_small:
            bound = f"above {minimum:g}" if strict else f"at least {minimum:g}"
            what = "a whole number" if integer else "a number"
            none = " or None" if optional else ""
            raise ConfigurationError(
                f"{owner}({attribute.name}={value!r}): must be {what} {bound}{none}; "
                f"pass e.g. {attribute.name}={example}"
            )

    return check


def _one_of(owner: str, valid: tuple[Any, ...]) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        # compare types too: 1 == True, but console=1 is a mistake, not a request for the rich console
        if not any(type(v) is type(value) and v == value for v in valid):
            names = ", ".join(repr(v) for v in valid)
            raise ConfigurationError(f"{owner}({attribute.name}={value!r}): expected one of {names}")

    return check


def _check_bool(owner: str) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, bool):
            raise ConfigurationError(f"{owner}({attribute.name}={value!r}): expected True or False")

    return check


@dataclass_view
@attrs.frozen(kw_only=True)
class Worker:
    """Task slots per node and the executor that runs them.

    ``concurrency`` tasks run at once on each node. More are sent ahead to wait on the worker, so
    a node never idles for a round trip between tasks: by default as many as cover the node's
    measured round trip at its measured pace (an adaptive window per node, at most 64 beyond
    ``concurrency``: client/node.py); ``buffer=N`` fixes that at ``N`` (``buffer=0``: none sent
    ahead). ``"thread"`` (what ``"auto"`` means today) has the lowest overhead; ``"process"``
    sidesteps the GIL for CPU-bound pure Python.
    """

    concurrency: int = attrs.field(
        default=1, validator=_number("Worker", minimum=1, strict=False, integer=True, example="4")
    )
    buffer: int | None = attrs.field(
        default=None,
        validator=_number("Worker", minimum=0, strict=False, integer=True, optional=True, example="2"),
    )
    executor: Executor = attrs.field(default="auto", validator=_one_of("Worker", EXECUTORS))
    reuse_processes: bool = attrs.field(default=True, validator=_check_bool("Worker"))

    @property
    def resolved_executor(self) -> Literal["thread", "process"]:
        """The executor actually used: ``"auto"`` picks threads."""
        return "thread" if self.executor == "auto" else self.executor  # type: ignore[return-value]

    @property
    def slots(self) -> int:
        """Tasks one node holds for sure: running plus a fixed ``buffer`` (the adaptive window's
        extra, when ``buffer`` is None, varies with the node's round trip and is not counted)."""
        return self.concurrency + (self.buffer or 0)


def _level(value: object) -> str:
    if not isinstance(value, str):
        return value  # type: ignore[return-value]  # the validator reports it
    name = value.strip().upper()
    return "WARNING" if name == "WARN" else name


def _check_rotation(instance: LogConfig, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or _rotation_unit(value) is None:
        raise ConfigurationError(
            f'LogConfig(rotation={value!r}): expected a size like "50 MB" or a period like "1 day"'
        )


@dataclass_view
@attrs.frozen(kw_only=True)
class LogConfig:
    """Skyward's own log file and console logging (not the pool's progress display).

    ``rotation`` is a size (``"50 MB"``) or a period (``"1 day"``); ``retention`` is how many
    rotated files to keep. ``file=None`` turns the file off.
    """

    level: str = attrs.field(default="INFO", converter=_level, validator=_one_of("LogConfig", LOG_LEVELS))
    file: str | None = "~/.skyward/logs/skyward.log"
    console: bool = attrs.field(default=True, validator=_check_bool("LogConfig"))
    rotation: str = attrs.field(default="50 MB", validator=_check_rotation)
    retention: int = attrs.field(
        default=10, validator=_number("LogConfig", minimum=0, strict=False, integer=True, example="10")
    )

    @property
    def rotation_bytes(self) -> int | None:
        """The size that triggers rotation, or ``None`` when rotation is by period."""
        amount, unit = _rotation_unit(self.rotation) or (0.0, "")
        return int(amount * _SIZE_UNITS[unit]) if unit in _SIZE_UNITS else None

    @property
    def rotation_seconds(self) -> float | None:
        """The period that triggers rotation, or ``None`` when rotation is by size."""
        amount, unit = _rotation_unit(self.rotation) or (0.0, "")
        return amount * _INTERVAL_UNITS[unit] if unit in _INTERVAL_UNITS else None


def _check_worker(instance: Options, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, Worker):
        raise ConfigurationError(
            f"Options(worker={value!r}): expected a sky.Worker; pass e.g. worker=sky.Worker(concurrency=4)"
        )


def _check_logging(instance: Options, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool | LogConfig):
        raise ConfigurationError(
            f"Options(logging={value!r}): expected True, False or a sky.LogConfig; "
            'pass e.g. logging=sky.LogConfig(level="DEBUG")'
        )


def _check_cluster(instance: Options, attribute: attrs.Attribute[Any], value: object) -> None:
    """`cluster=False` runs the nodes independently: distributed collections are off (a task that
    asks for one gets an error saying so). None and True keep them on: the nodes coordinate through
    the client, which holds the collections' state, so there is no cluster to form."""
    if value is not None and not isinstance(value, bool):
        raise ConfigurationError(
            f"Options(cluster={value!r}): expected True, False (collections off) or None (leave it out)"
        )


def _check_health(instance: Options, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, HealthChecker):
        raise ConfigurationError(
            f"Options(health_checker={value!r}): expected a sky.HealthChecker; "
            "pass e.g. health_checker=sky.HealthChecker(check=lambda: True, interval=30, failures=3)"
        )


def _seconds(*, optional: bool = False, strict: bool = True, example: str) -> Any:
    return _number("Options", minimum=0, strict=strict, optional=optional, example=example)


def _check_server(instance: object, attribute: object, value: object) -> None:
    if value is not None and not (isinstance(value, str) and value.startswith(("http://", "https://"))):
        raise ConfigurationError(
            f"Options(server={value!r}): expected a pool server's URL; pass e.g. "
            'server="http://127.0.0.1:8470" (what `sky server start` prints)'
        )


@dataclass_view
@attrs.frozen(kw_only=True)
class Options:
    """Operational knobs for a pool; every default is meant to be left alone.

    ``None`` for a timeout or retry knob means "the provider's own default" (a cloud VM and a
    local process need very different patience). ``default_compute_timeout=None`` means tasks
    have no default time limit.
    """

    selection: Selection = attrs.field(default="cheapest", validator=_one_of("Options", SELECTIONS))
    worker: Worker | None = attrs.field(default=None, validator=_check_worker)
    provision_timeout: int | None = attrs.field(
        default=None, validator=_seconds(optional=True, example="600")
    )
    ssh_timeout: int | None = attrs.field(default=None, validator=_seconds(optional=True, example="60"))
    bootstrap_timeout: int | None = attrs.field(
        default=None, validator=_seconds(optional=True, example="900")
    )
    provision_retry_delay: float | None = attrs.field(
        default=None, validator=_seconds(optional=True, strict=False, example="5.0")
    )
    max_provision_attempts: int | None = attrs.field(
        default=None,
        validator=_number("Options", minimum=1, strict=False, integer=True, optional=True, example="3"),
    )
    ssh_retry_interval: int | None = attrs.field(default=None, validator=_seconds(optional=True, example="2"))
    default_compute_timeout: float | None = attrs.field(
        default=300.0, validator=_seconds(optional=True, example="3600.0")
    )
    autoscale_cooldown: float = attrs.field(default=30.0, validator=_seconds(strict=False, example="30.0"))
    autoscale_idle_timeout: float = attrs.field(
        default=60.0, validator=_seconds(strict=False, example="60.0")
    )
    reconcile_tick_interval: float = attrs.field(default=15.0, validator=_seconds(example="15.0"))
    shutdown_timeout: float = attrs.field(default=120.0, validator=_seconds(strict=False, example="120.0"))
    console: bool | ConsoleMode = attrs.field(
        default=True, validator=_one_of("Options", (True, False, *CONSOLE_MODES))
    )
    logging: LogConfig | bool = attrs.field(default=True, validator=_check_logging)
    cluster: bool | None = attrs.field(default=None, validator=_check_cluster)
    retry_on_interruption: int = attrs.field(
        default=3, validator=_number("Options", minimum=0, strict=False, integer=True, example="3")
    )
    health_checker: HealthChecker | None = attrs.field(default=None, validator=_check_health)
    #: A pool server's URL: `Compute(name=NAME)` attaches to the pool NAME it holds (docs/server.md).
    server: str | None = attrs.field(default=None, validator=_check_server)
    #: Keep a cloud pool's machines `Spec.ttl` seconds after a clean exit, for the next pool with
    #: the same spec to adopt (docs/compute.md#lingering-machines); their guardians end them
    #: after that. Off by default: no machine outlives its pool unless asked to.
    linger: bool = attrs.field(default=False, validator=_check_bool("Options"))

    @property
    def console_mode(self) -> ConsoleMode:
        """The console to show: ``True`` means ``"rich"``, ``False`` means ``"silent"``."""
        if self.console is True:
            return "rich"
        if self.console is False:
            return "silent"
        return self.console

    @property
    def worker_config(self) -> Worker:
        """The worker settings in force (``Worker()`` when none were given)."""
        return self.worker if self.worker is not None else Worker()

    @property
    def log_config(self) -> LogConfig | None:
        """The logging settings in force: ``None`` when logging is off, defaults for ``True``."""
        if self.logging is True:
            return LogConfig()
        if self.logging is False:
            return None
        return self.logging
