"""Skyward's own logs: structlog routed into a rotating file, with secrets masked.

`configure_logging(Options.logging)` is called by the pool when it starts. It configures structlog
once per process to hand records to the stdlib logger named after the calling module
(`skyward.client.pool`, `skyward.observe.events`, ...), and attaches a rotating file handler to
the `skyward` logger, so Skyward's logs go to `~/.skyward/logs/skyward.log` (under `$SKYWARD_HOME` when set)
and not to the application's root logger. If the application configured structlog itself, that
configuration is left alone and only the file handler is attached (structlog's own defaults, put
back by `reset_defaults` or an ended `capture_logs`, are not such a configuration).

Modules log with `structlog.get_logger().info("skyward.node_ready", node=1)` inside functions, never
through a logger bound at module scope: cloudpickle ships functions to workers and a cached bound
logger does not pickle. For the same reason `cache_logger_on_first_use` stays off.

Credentials registered with `register_secret` (see `skyward.secrets`) and URL passwords
(`https://user:password@host`) are masked as `***` in every line, whatever logged it.

The log holds what a pool did, with hosts, commands and paths: the file is created 0600 (and made
0600 if it already exists, rotated files included), in a folder Skyward creates 0700; the default
folder (`~/.skyward/logs`) is made 0700 even when it already exists.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import re
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import structlog

from skyward import secrets as _secrets
from skyward.errors import ConfigurationError
from skyward.home import log_path, skyward_home
from skyward.secrets import MIN_SECRET_LENGTH as MIN_SECRET_LENGTH
from skyward.secrets import register_secret, registered_secrets

if TYPE_CHECKING:
    from skyward.options import LogConfig

__all__ = [
    "DEFAULT_LOG_FILE",
    "configure_logging",
    "mask_secrets_processor",
    "register_secret",
    "registered_secrets",
    "reset_logging",
]

DEFAULT_LOG_FILE = "~/.skyward/logs/skyward.log"
TRACE = 5

# Binary multiples, as `LogConfig.rotation_bytes` computes them ("50 MB" is 50 * 1024**2 bytes).
_SIZE_UNITS = {"b": 1, "kb": 2**10, "mb": 2**20, "gb": 2**30, "kib": 2**10, "mib": 2**20, "gib": 2**30}
_TIME_UNITS = {  # unit -> (TimedRotatingFileHandler `when`, multiplier)
    "s": ("S", 1), "sec": ("S", 1), "second": ("S", 1),
    "m": ("M", 1), "min": ("M", 1), "minute": ("M", 1),
    "h": ("H", 1), "hour": ("H", 1),
    "d": ("D", 1), "day": ("D", 1),
    "w": ("D", 7), "week": ("D", 7),
}
_ROTATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$")


class LogSettings(Protocol):
    """What `configure_logging` reads: `skyward.options.LogConfig` or anything shaped like it."""

    level: str
    file: str
    console: bool
    rotation: str
    retention: int


@attrs.frozen
class _Defaults:
    """`LogConfig()`'s defaults, used for `logging=True` when `skyward.options` is not importable."""

    level: str = "INFO"
    file: str = DEFAULT_LOG_FILE
    console: bool = True
    rotation: str = "50 MB"
    retention: int = 10


@attrs.define
class _State:
    """What this module changed, so a second call can replace it and `reset_logging` can undo it."""

    key: tuple[Any, ...] | None = None
    handlers: list[logging.Handler] = attrs.field(factory=list)
    structlog_ours: bool = False
    lock: threading.RLock = attrs.field(factory=threading.RLock)


_state = _State()


# `register_secret` and `registered_secrets` live in `skyward.secrets` (the registry the event bus,
# the console and remote errors read too); plugin and provider authors are told to register their
# secrets here (docs/plugins.md), beside the logging those secrets are masked out of.


def _mask(text: str) -> str:
    return _secrets.mask(text)


def mask_secrets_processor(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: mask registered secrets and URL passwords in every value (non-strings
    through their repr)."""
    for key, value in list(event_dict.items()):
        if isinstance(value, str):
            event_dict[key] = _mask(value)
        elif value is not None and not isinstance(value, (bool, int, float)):
            text = repr(value)
            masked = _mask(text)
            if masked != text:
                event_dict[key] = masked
    return event_dict


def _mask_rendered(logger: Any, method_name: str, rendered: Any) -> Any:
    """Last formatter step: mask the finished line, which also covers tracebacks and stdlib records."""
    return _mask(rendered) if isinstance(rendered, str) else rendered


def parse_level(level: str) -> int:
    """`"DEBUG"`, `"info"`, `"WARN"`, `"TRACE"`... -> a stdlib level number."""
    name = str(level).strip().upper()
    if name == "TRACE":
        return TRACE
    if name == "WARN":
        name = "WARNING"
    number = logging.getLevelName(name)
    if not isinstance(number, int):
        raise ConfigurationError(
            f"log level {level!r} is not one of TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL"
        )
    return number


def build_file_handler(path: Path, rotation: str, retention: int) -> logging.Handler:
    """A rotating handler for `path`: by size ("50 MB", "1 GiB") or by time ("1 day", "12 hours").

    `retention` is how many rotated files are kept beside the live one.
    """
    match = _ROTATION.match(str(rotation))
    if match is None:
        raise ConfigurationError(
            f"log rotation {rotation!r} is neither a size like '50 MB' nor a time like '1 day'"
        )
    amount, unit = float(match.group(1)), match.group(2).lower()
    _private_folder(path.parent)
    if unit in _SIZE_UNITS:
        return _PrivateRotatingFileHandler(
            path, maxBytes=int(amount * _SIZE_UNITS[unit]), backupCount=retention, encoding="utf-8"
        )
    singular = unit[:-1] if unit.endswith("s") and unit[:-1] in _TIME_UNITS else unit
    if singular in _TIME_UNITS:
        when, multiplier = _TIME_UNITS[singular]
        return _PrivateTimedRotatingFileHandler(
            path, when=when, interval=max(1, int(amount * multiplier)), backupCount=retention,
            encoding="utf-8",
        )
    raise ConfigurationError(
        f"log rotation {rotation!r}: unknown unit {unit!r}; "
        "use B/KB/MB/GB or seconds/minutes/hours/days/weeks"
    )


def _private_folder(folder: Path) -> None:
    """Create `folder` 0700 (whatever the umask); make Skyward's own log folder 0700 if it exists.

    A folder the user named and that already exists (their project, /var/log/...) keeps its mode:
    the file itself is 0600 there.
    """
    if not folder.exists():
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
        os.chmod(folder, 0o700)
    elif folder.resolve() == (skyward_home() / "logs").resolve():
        os.chmod(folder, 0o700)


def _open_private(handler: logging.FileHandler) -> Any:
    """The log stream, opened 0600 and made 0600 if it existed: rotation reopens through this too."""
    fd = os.open(handler.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with contextlib.suppress(OSError):  # a file owned by someone else (a shared log path): still log
        os.fchmod(fd, 0o600)
    # The handler closes the stream (SIM115).
    return open(fd, "a", encoding=handler.encoding, errors=handler.errors)  # noqa: SIM115


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """`RotatingFileHandler` whose files are 0600."""

    def _open(self) -> Any:
        return _open_private(self)


class _PrivateTimedRotatingFileHandler(logging.handlers.TimedRotatingFileHandler):
    """`TimedRotatingFileHandler` whose files are 0600."""

    def _open(self) -> Any:
        return _open_private(self)


def _formatter() -> logging.Formatter:
    """Plain `timestamp [level] logger event key=value` lines, readable with `tail` and `grep`."""
    shared = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso"),
    ]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            mask_secrets_processor,
            structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback),
            _mask_rendered,
        ],
    )


def _structlog_settings() -> tuple[Any, ...]:
    """The objects structlog's configuration is made of, for telling two configurations apart."""
    config = structlog.get_config()
    return (
        *config["processors"], config["logger_factory"], config["wrapper_class"],
        config["context_class"], config["cache_logger_on_first_use"],
    )


#: structlog's defaults as this process had them before anything configured structlog (None when
#: something had). `structlog.is_configured()` alone cannot tell an application's configuration
#: from a `structlog.testing.capture_logs()` block that ended: the block calls `configure` to put
#: the defaults back, which marks structlog configured for good, and a pool opened after a test's
#: `capture_logs` would then leave structlog unrouted and write nothing to Skyward's log.
_PRISTINE_STRUCTLOG: tuple[Any, ...] | None = None if structlog.is_configured() else _structlog_settings()


def _configured_by_application() -> bool:
    """Whether structlog holds a configuration other than its defaults (the very same objects:
    `reset_defaults` and `capture_logs` put those back, an application's `configure` never does)."""
    if not structlog.is_configured():
        return False
    pristine = _PRISTINE_STRUCTLOG
    current = _structlog_settings()
    return pristine is None or len(current) != len(pristine) or any(
        mine is not theirs for mine, theirs in zip(current, pristine, strict=True)
    )


def _configure_structlog() -> None:
    """Route structlog into stdlib logging, unless the application already configured structlog."""
    if _state.structlog_ours or _configured_by_application():
        return
    logging.addLevelName(TRACE, "TRACE")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.filter_by_level,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.StackInfoRenderer(),
            mask_secrets_processor,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,  # cached loggers do not pickle, and functions travel by cloudpickle
    )
    _state.structlog_ours = True


def _settings(config: LogSettings | LogConfig | bool) -> LogSettings | None:
    if config is False or config is None:
        return None
    if config is True:
        try:
            from skyward.options import LogConfig
        except ImportError:
            return _Defaults()
        return LogConfig()  # type: ignore[return-value]
    return config  # type: ignore[return-value]


class _CurrentStderr:
    """Writes to whatever `sys.stderr` is at each record: while the rich console's live area runs,
    that is its proxy, which prints the line above the spinner rather than over it."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(config: LogSettings | LogConfig | bool = True) -> Path | None:
    """Set up Skyward's logging from `Options.logging`; returns the log file, or None when there is none.

    Calling it again with the same settings does nothing, so every pool in a process may call it;
    different settings replace the previous handlers. `False` silences Skyward's own logs, and
    `file=None` keeps only the stderr handler (when `console` is on).
    """
    settings = _settings(config)
    with _state.lock:
        if settings is None:
            key: tuple[Any, ...] = ("off",)
            path: Path | None = None
        else:
            level = parse_level(getattr(settings, "level", "INFO"))
            file = getattr(settings, "file", DEFAULT_LOG_FILE)
            path = log_path(str(file)) if file else None
            console = bool(getattr(settings, "console", True))
            rotation = str(getattr(settings, "rotation", "50 MB"))
            retention = int(getattr(settings, "retention", 10))
            key = (level, path, console, rotation, retention)
        if key == _state.key:
            return path
        handlers: list[logging.Handler] = []
        if settings is not None:
            if path is not None:
                handlers.append(build_file_handler(path, rotation, retention))
                handlers[-1].setLevel(level)
            if console:
                # Problems in Skyward itself reach stderr; progress is the Console's job, not the log's.
                handlers.append(logging.StreamHandler(_CurrentStderr()))
                handlers[-1].setLevel(max(level, logging.WARNING))
        _remove_handlers()
        logger = logging.getLogger("skyward")
        formatter = _formatter()
        for handler in handlers:
            handler.setFormatter(formatter)
            logger.addHandler(handler)
        # No handler at all: raise the level so disabled logging costs one comparison per call.
        logger.setLevel(min(h.level for h in handlers) if handlers else logging.CRITICAL + 1)
        logger.propagate = False  # Skyward's records stay in its own file, off the application's root logger
        _state.handlers = handlers
        _state.key = key
        _configure_structlog()
        return path


def _remove_handlers() -> None:
    logger = logging.getLogger("skyward")
    for handler in _state.handlers:
        logger.removeHandler(handler)
        handler.close()
    _state.handlers = []


def reset_logging() -> None:
    """Undo `configure_logging` (handlers, levels, structlog config and secrets); for tests and embedders."""
    with _state.lock:
        _remove_handlers()
        logger = logging.getLogger("skyward")
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
        if _state.structlog_ours:
            structlog.reset_defaults()
            _state.structlog_ours = False
        _state.key = None
        _secrets.clear_secrets()
