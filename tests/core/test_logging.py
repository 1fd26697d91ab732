"""Skyward's own logs land in a rotating file under SKYWARD_HOME, with secrets masked."""

from __future__ import annotations

import logging
import logging.handlers
import pickle
from collections.abc import Iterator
from pathlib import Path

import attrs
import cloudpickle
import pytest
import structlog

from skyward.errors import ConfigurationError
from skyward.home import log_path
from skyward.observe.logging import (
    build_file_handler,
    configure_logging,
    parse_level,
    register_secret,
    reset_logging,
)


@attrs.frozen
class Config:
    """Shaped like `skyward.options.LogConfig`; `configure_logging` accepts any such object."""

    level: str = "INFO"
    file: str = "~/.skyward/logs/skyward.log"
    console: bool = False
    rotation: str = "50 MB"
    retention: int = 10


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path))
    reset_logging()
    structlog.reset_defaults()
    yield tmp_path
    reset_logging()


def _flush() -> None:
    for handler in logging.getLogger("skyward").handlers:
        handler.flush()


def _log(event: str, level: str = "info", **fields: object) -> None:
    """Log the way Skyward modules do: a logger fetched at call time, named for a skyward module."""
    getattr(structlog.get_logger("skyward.test"), level)(event, **fields)
    _flush()


def test_default_log_file_lives_under_skyward_home(home: Path) -> None:
    assert configure_logging(Config()) == home / "logs" / "skyward.log"


def test_namespaced_event_with_fields_reaches_the_file(home: Path) -> None:
    path = configure_logging(Config())
    _log("skyward.node_ready", node=3)
    text = path.read_text()
    assert "skyward.node_ready" in text
    assert "node=3" in text


def test_records_below_configured_level_are_dropped(home: Path) -> None:
    path = configure_logging(Config(level="WARNING"))
    _log("skyward.chatty", level="info")
    _log("skyward.problem", level="warning")
    text = path.read_text()
    assert "skyward.chatty" not in text
    assert "skyward.problem" in text


def test_registered_secret_is_masked_in_fields_and_messages(home: Path) -> None:
    path = configure_logging(Config())
    register_secret("hf_abcdef123456")
    _log("skyward.bootstrap_command", command="export HF_TOKEN=hf_abcdef123456")
    text = path.read_text()
    assert "hf_abcdef123456" not in text
    assert "HF_TOKEN=***" in text


def test_registered_secret_is_masked_in_plain_stdlib_records(home: Path) -> None:
    path = configure_logging(Config())
    register_secret("sk-live-9999")
    logging.getLogger("skyward.provider").warning("auth failed for sk-live-9999")
    _flush()
    assert "sk-live-9999" not in path.read_text()


def test_registered_secret_is_masked_in_tracebacks(home: Path) -> None:
    path = configure_logging(Config())
    register_secret("sk-live-9999")
    try:
        raise RuntimeError("bad key sk-live-9999")
    except RuntimeError:
        structlog.get_logger("skyward.test").exception("skyward.failed")
    _flush()
    text = path.read_text()
    assert "RuntimeError" in text
    assert "sk-live-9999" not in text


def test_very_short_secret_is_not_registered(home: Path) -> None:
    path = configure_logging(Config())
    register_secret("a")
    _log("skyward.value", value="banana")
    assert "banana" in path.read_text()


def test_configuring_twice_with_same_settings_installs_one_handler(home: Path) -> None:
    configure_logging(Config())
    configure_logging(Config())
    assert len(logging.getLogger("skyward").handlers) == 1


def test_new_settings_replace_previous_handlers(home: Path) -> None:
    configure_logging(Config())
    path = configure_logging(Config(file=str(home / "other.log")))
    assert path == home / "other.log"
    [handler] = logging.getLogger("skyward").handlers
    assert Path(handler.baseFilename) == home / "other.log"  # type: ignore[attr-defined]


def test_console_setting_adds_stderr_handler_for_warnings(home: Path) -> None:
    configure_logging(Config(console=True))
    levels = sorted(
        h.level for h in logging.getLogger("skyward").handlers if type(h) is logging.StreamHandler
    )
    assert levels == [logging.WARNING]


def test_logging_false_silences_skyward_and_returns_none(home: Path, capsys: pytest.CaptureFixture) -> None:
    assert configure_logging(False) is None
    _log("skyward.should_not_appear", level="error")
    captured = capsys.readouterr()
    assert "should_not_appear" not in captured.out + captured.err
    assert not list(home.rglob("*.log"))


def test_file_none_keeps_only_the_stderr_handler(home: Path) -> None:
    assert configure_logging(Config(file=None, console=True)) is None  # type: ignore[arg-type]
    [handler] = logging.getLogger("skyward").handlers
    assert type(handler) is logging.StreamHandler
    assert not list(home.rglob("*.log"))


def test_accepts_the_public_log_config(home: Path) -> None:
    from skyward.options import LogConfig

    path = configure_logging(LogConfig(level="DEBUG", console=False, rotation="1 day", retention=3))
    _log("skyward.debug_detail", level="debug")
    assert "skyward.debug_detail" in path.read_text()


def test_logging_true_uses_defaults_under_skyward_home(home: Path) -> None:
    assert configure_logging(True) == home / "logs" / "skyward.log"


def test_skyward_records_do_not_propagate_to_the_root_logger(home: Path) -> None:
    configure_logging(Config())
    assert logging.getLogger("skyward").propagate is False


def test_structlog_configured_by_the_application_is_left_alone(home: Path) -> None:
    sentinel = structlog.processors.JSONRenderer()
    structlog.configure(processors=[sentinel])
    try:
        configure_logging(Config())
        assert structlog.get_config()["processors"] == [sentinel]
    finally:
        structlog.reset_defaults()


def test_structlog_put_back_to_its_defaults_by_capture_logs_is_routed_to_the_file(home: Path) -> None:
    """A test suite's `capture_logs` block that ended leaves structlog marked configured, with its
    defaults: that is not an application's configuration, and Skyward's log still gets the lines."""
    with structlog.testing.capture_logs():
        structlog.get_logger("skyward.test").info("skyward.captured")
    assert structlog.is_configured()
    path = configure_logging(Config())
    _log("skyward.after_capture", node=2)
    assert "skyward.after_capture" in path.read_text()


def test_structlog_configured_by_the_application_after_import_is_left_alone(home: Path) -> None:
    """The defaults are told apart by identity: an application's own processors, even of the
    default kinds, are its configuration."""
    processors = [structlog.processors.add_log_level, structlog.processors.JSONRenderer()]
    structlog.configure(processors=processors)
    try:
        configure_logging(Config())
        assert structlog.get_config()["processors"] == processors
    finally:
        structlog.reset_defaults()


def test_loggers_survive_pickling_after_configuration(home: Path) -> None:
    configure_logging(Config())
    logger = structlog.get_logger()
    assert pickle.loads(pickle.dumps(logger)) is not None


def test_function_that_logs_ships_through_cloudpickle(home: Path) -> None:
    path = configure_logging(Config())

    def task() -> int:
        structlog.get_logger("skyward.remote").info("skyward.task_ran", answer=42)
        return 42

    assert cloudpickle.loads(cloudpickle.dumps(task))() == 42
    _flush()
    assert "answer=42" in path.read_text()


def test_size_rotation_uses_rotating_file_handler(tmp_path: Path) -> None:
    handler = build_file_handler(tmp_path / "x.log", "50 MB", 3)
    assert isinstance(handler, logging.handlers.RotatingFileHandler)
    assert (handler.maxBytes, handler.backupCount) == (50 * 1024**2, 3)
    handler.close()


def test_time_rotation_uses_timed_rotating_file_handler(tmp_path: Path) -> None:
    handler = build_file_handler(tmp_path / "x.log", "1 day", 5)
    assert isinstance(handler, logging.handlers.TimedRotatingFileHandler)
    assert (handler.when, handler.interval, handler.backupCount) == ("D", 86400, 5)
    handler.close()


def test_week_rotation_is_seven_days(tmp_path: Path) -> None:
    handler = build_file_handler(tmp_path / "x.log", "2 weeks", 1)
    assert handler.interval == 14 * 86400  # type: ignore[attr-defined]
    handler.close()


def test_size_rotation_rolls_files_over(tmp_path: Path) -> None:
    path = configure_logging(Config(file=str(tmp_path / "small.log"), rotation="1 KB", retention=2))
    for n in range(100):
        _log("skyward.filler", n=n, padding="x" * 50)
    assert sorted(p.name for p in tmp_path.glob("small.log*")) == ["small.log", "small.log.1", "small.log.2"]
    assert path.stat().st_size <= 1024


def test_unparseable_rotation_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="rotation"):
        build_file_handler(tmp_path / "x.log", "sometimes", 1)


def test_unknown_rotation_unit_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="unknown unit"):
        build_file_handler(tmp_path / "x.log", "3 fortnights", 1)


def test_unknown_level_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="log level"):
        parse_level("LOUD")


def test_trace_and_warn_levels_are_understood() -> None:
    assert parse_level("trace") < logging.DEBUG
    assert parse_level("WARN") == logging.WARNING


def test_paths_outside_skyward_home_expand_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert log_path("~/elsewhere/a.log") == tmp_path / "elsewhere" / "a.log"
