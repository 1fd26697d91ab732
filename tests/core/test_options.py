"""Options, Worker and LogConfig: defaults, validation, and the properties consumers read."""

from __future__ import annotations

import pickle

import pytest

from skyward.errors import ConfigurationError
from skyward.options import LogConfig, Options, Worker

# --- Worker


def test_worker_defaults_to_one_thread_slot_and_the_adaptive_window() -> None:
    worker = Worker()
    assert (worker.concurrency, worker.buffer, worker.executor, worker.reuse_processes) == (
        1,
        None,
        "auto",
        True,
    )
    assert worker.slots == 1  # the adaptive window's extra varies, and is not counted


def test_worker_auto_executor_resolves_to_thread() -> None:
    assert Worker().resolved_executor == "thread"


def test_worker_explicit_executor_is_kept() -> None:
    assert Worker(executor="process").resolved_executor == "process"


def test_worker_slots_count_running_and_prefetched_tasks() -> None:
    assert Worker(concurrency=4, buffer=2).slots == 6


def test_worker_with_zero_concurrency_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="concurrency=4"):
        Worker(concurrency=0)


def test_worker_with_negative_buffer_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match=r"Worker\(buffer=-1\): must be a whole number at least 0"):
        Worker(buffer=-1)


def test_worker_with_unknown_executor_lists_valid_values() -> None:
    with pytest.raises(ConfigurationError, match="'auto', 'thread', 'process'"):
        Worker(executor="fork")  # type: ignore[arg-type]


def test_worker_with_a_fractional_concurrency_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="whole number"):
        Worker(concurrency=1.5)  # type: ignore[arg-type]


# --- LogConfig


def test_log_config_defaults_match_the_reference() -> None:
    config = LogConfig()
    assert (config.level, config.file, config.console, config.rotation, config.retention) == (
        "INFO",
        "~/.skyward/logs/skyward.log",
        True,
        "50 MB",
        10,
    )


def test_log_config_level_is_case_insensitive() -> None:
    assert LogConfig(level="debug").level == "DEBUG"


def test_log_config_with_unknown_level_lists_valid_values() -> None:
    with pytest.raises(ConfigurationError, match="'TRACE', 'DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'"):
        LogConfig(level="VERBOSE")


def test_log_config_warn_is_stored_as_warning() -> None:
    assert LogConfig(level="warn").level == "WARNING"


@pytest.mark.parametrize(("rotation", "size"), [("1 GiB", 2**30), ("3 kb", 3 * 2**10)])
def test_log_config_accepts_the_size_units_the_file_handler_knows(rotation: str, size: int) -> None:
    assert LogConfig(rotation=rotation).rotation_bytes == size


@pytest.mark.parametrize(
    ("rotation", "seconds"), [("12 hours", 43_200.0), ("30s", 30.0), ("2 w", 1_209_600.0)]
)
def test_log_config_accepts_the_time_units_the_file_handler_knows(rotation: str, seconds: float) -> None:
    assert LogConfig(rotation=rotation).rotation_seconds == seconds


def test_log_config_size_rotation_is_read_in_bytes() -> None:
    config = LogConfig(rotation="50 MB")
    assert (config.rotation_bytes, config.rotation_seconds) == (50 * 1024 * 1024, None)


def test_log_config_period_rotation_is_read_in_seconds() -> None:
    config = LogConfig(rotation="1 day")
    assert (config.rotation_bytes, config.rotation_seconds) == (None, 86_400.0)


def test_log_config_with_unreadable_rotation_shows_both_forms() -> None:
    with pytest.raises(ConfigurationError, match='"50 MB" or a period like "1 day"'):
        LogConfig(rotation="often")


def test_log_config_with_negative_retention_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="retention"):
        LogConfig(retention=-1)


# --- Options


def test_options_defaults_match_the_reference() -> None:
    options = Options()
    assert options.selection == "cheapest"
    assert options.worker is None
    assert options.default_compute_timeout == 300.0
    assert (options.autoscale_cooldown, options.autoscale_idle_timeout) == (30.0, 60.0)
    assert (options.reconcile_tick_interval, options.shutdown_timeout) == (15.0, 120.0)
    assert (options.console, options.logging, options.cluster) == (True, True, None)
    assert options.retry_on_interruption == 3
    assert options.health_checker is None


@pytest.mark.parametrize(
    ("console", "mode"),
    [
        (True, "rich"),
        (False, "silent"),
        ("rich", "rich"),
        ("minimal", "minimal"),
        ("log", "log"),
        ("silent", "silent"),
    ],
)
def test_options_console_mode_resolves_booleans(console: object, mode: str) -> None:
    assert Options(console=console).console_mode == mode  # type: ignore[arg-type]


def test_options_with_unknown_console_lists_valid_values() -> None:
    with pytest.raises(ConfigurationError, match="'rich', 'minimal', 'log', 'silent'"):
        Options(console="fancy")  # type: ignore[arg-type]


def test_options_with_an_integer_console_is_not_taken_for_true() -> None:
    with pytest.raises(ConfigurationError, match="console=1"):
        Options(console=1)  # type: ignore[arg-type]


def test_options_worker_config_defaults_to_worker() -> None:
    assert Options().worker_config == Worker()


def test_options_worker_config_returns_the_given_worker() -> None:
    worker = Worker(concurrency=4)
    assert Options(worker=worker).worker_config is worker


def test_options_with_a_non_worker_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="worker=sky.Worker"):
        Options(worker=4)  # type: ignore[arg-type]


def test_options_log_config_is_none_when_logging_is_off() -> None:
    assert Options(logging=False).log_config is None


def test_options_log_config_defaults_when_logging_is_on() -> None:
    assert Options(logging=True).log_config == LogConfig()


def test_options_log_config_returns_the_given_config() -> None:
    config = LogConfig(level="DEBUG")
    assert Options(logging=config).log_config is config


def test_options_with_unknown_selection_lists_valid_values() -> None:
    with pytest.raises(ConfigurationError, match="'cheapest', 'first'"):
        Options(selection="fastest")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "field",
    [
        "provision_timeout",
        "ssh_timeout",
        "bootstrap_timeout",
        "ssh_retry_interval",
        "default_compute_timeout",
    ],
)
def test_options_with_a_zero_timeout_is_rejected(field: str) -> None:
    with pytest.raises(ConfigurationError, match=f"Options\\({field}=0\\): must be a number above 0"):
        Options(**{field: 0})


def test_options_default_compute_timeout_none_means_no_limit() -> None:
    assert Options(default_compute_timeout=None).default_compute_timeout is None


def test_options_with_zero_provision_attempts_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="max_provision_attempts=3"):
        Options(max_provision_attempts=0)


def test_options_with_negative_retries_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="retry_on_interruption"):
        Options(retry_on_interruption=-1)


def test_options_with_a_non_boolean_cluster_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="cluster"):
        Options(cluster="yes")  # type: ignore[arg-type]


def test_options_cluster_takes_true_false_or_none() -> None:
    assert Options(cluster=True).cluster is True
    assert Options(cluster=False).cluster is False
    assert Options().cluster is None


def test_options_survive_pickle() -> None:
    options = Options(worker=Worker(concurrency=2), logging=LogConfig(level="DEBUG"), console="log")
    assert pickle.loads(pickle.dumps(options)) == options


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Options("first")  # type: ignore[misc]
