"""Secrets do not show: a credential-named variable, a URL's password and a `PipIndex` password
appear in no console output, event, exception or log line, and the files that hold them are private.

The pool tests run one real `sky.Local()` pool in a child process (so its console is the child's
real stderr): a task prints the secrets, another raises with them in its message, the client logs
them, and every event reaches an `on_event` handler. The bootstrap tests run the rendered script for
real with bash, as `sky.Local(isolated=True)` and SSH hosts do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import structlog

import skyward as sky
from skyward.bootstrap.prepare import prepare_node
from skyward.bootstrap.runner import LocalRunner
from skyward.errors import BootstrapFailed
from skyward.extension.plugin import LaunchCommand
from skyward.image import env_secrets
from skyward.observe.logging import configure_logging, reset_logging
from skyward.options import LogConfig
from skyward.providers.base import NodeSetup

TOKEN = "hf_n0t-a-real-t0ken-4d1e"
URL_PASSWORD = "urlPassw0rd-7f3a"
INDEX_PASSWORD = "indexPassw0rd-91c2"
SECRETS = (TOKEN, URL_PASSWORD, INDEX_PASSWORD)
ENV = {"HF_TOKEN": TOKEN, "INDEX": f"https://alice:{URL_PASSWORD}@packages.example/simple"}
INDEX_URL = f"https://bob:{INDEX_PASSWORD}@index.example/simple"

#: The client a user writes: a pool whose image carries the secrets, tasks that print and raise
#: them, the application logging them, every event kept. Writes what it saw as JSON to argv[1].
CLIENT = textwrap.dedent(
    """
    import json, os, sys, traceback

    import structlog

    import skyward as sky
    from skyward.options import LogConfig

    ENV, INDEX_URL = json.loads(sys.argv[2])


    @sky.function
    def show_secrets():
        print("token", os.environ["HF_TOKEN"], "index", os.environ["INDEX"])
        print("on stderr", os.environ["HF_TOKEN"], file=sys.stderr)
        return "printed"


    @sky.function
    def raise_secrets():
        raise ValueError(f"cannot log in with {os.environ['HF_TOKEN']} at {os.environ['INDEX']}")


    events = []
    image = sky.Image(env=ENV, pip_indexes=[sky.PipIndex(url=INDEX_URL, packages=["private-lib"])])
    with sky.Compute(
        provider=sky.Local(), nodes=1, image=image, console="log", on_event=lambda e: events.append(repr(e)),
        logging=LogConfig(level="DEBUG"),
    ) as pool:
        result = show_secrets() >> pool
        try:
            raise_secrets() >> pool
        except ValueError as exc:
            error = str(exc)
            error_report = "".join(traceback.format_exception(exc))
        log = structlog.get_logger("skyward.app")  # as a plugin logs: anything under skyward.* is filed
        log.warning("app.connecting", token=ENV["HF_TOKEN"], index=ENV["INDEX"], pip=INDEX_URL)
        try:
            raise RuntimeError(f"login failed for {ENV['HF_TOKEN']}")
        except RuntimeError:
            log.exception("app.login_failed")
    with open(sys.argv[1], "w") as out:
        json.dump({"result": result, "events": events, "error": error, "error_report": error_report}, out)
    """
)


def _leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One pool run by a user's client process, and everything it showed or wrote."""
    home = tmp_path_factory.mktemp("skyward-home")
    script = home / "client.py"
    script.write_text(CLIENT)
    report = home / "report.json"
    env = {**os.environ, "SKYWARD_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, str(script), str(report), json.dumps([ENV, INDEX_URL])],
        capture_output=True, text=True, env=env, timeout=240, cwd=home,
    )
    assert done.returncode == 0, done.stderr
    return {**json.loads(report.read_text()), "stdout": done.stdout, "stderr": done.stderr,
            "log": home / "logs" / "skyward.log"}


def test_a_task_printing_secrets_reaches_the_console_masked(run: dict[str, Any]) -> None:
    assert run["result"] == "printed"
    console = run["stdout"] + run["stderr"]
    assert "token *** index https://alice:***@packages.example/simple" in console
    assert "on stderr ***" in console
    assert _leaked(console) == []


def test_no_event_carries_a_secret(run: dict[str, Any]) -> None:
    events = "\n".join(run["events"])
    assert "token *** index https://alice:***@packages.example/simple" in events  # the task's Log event
    assert _leaked(events) == []


def test_an_exception_quoting_secrets_reaches_the_user_masked(run: dict[str, Any]) -> None:
    assert run["error"] == "cannot log in with *** at https://alice:***@packages.example/simple"
    assert "Remote traceback" in run["error_report"]
    assert _leaked(run["error_report"]) == []


def test_the_client_log_masks_secrets_whatever_logged_them(run: dict[str, Any]) -> None:
    text = run["log"].read_text()
    assert "app.connecting" in text and "login failed for ***" in text
    assert "https://bob:***@index.example/simple" in text
    assert _leaked(text) == []


def test_the_client_log_is_0600_in_a_0700_folder(run: dict[str, Any]) -> None:
    assert stat.S_IMODE(run["log"].stat().st_mode) == 0o600
    assert stat.S_IMODE(run["log"].parent.stat().st_mode) == 0o700


# --- what counts as a secret ----------------------------------------------------------------------


def test_credentials_are_named_by_whole_words_and_found_in_url_passwords() -> None:
    env = {
        "HF_TOKEN": "hf_value_1", "WANDB_API_KEY": "wandb_value_2", "AWS_SECRET_ACCESS_KEY": "aws_value_3",
        "DB_PASS": "db_value_4", "GITHUB_AUTH": "gh_value_5",
        "KEYBOARD_LAYOUT": "dvorak", "TOKENIZERS_PARALLELISM": "false", "AUTHOR": "someone",
        "DATABASE_URL": "postgres://app:pg_value_6@db.internal:5432/app",
    }
    assert env_secrets(env) == (
        "hf_value_1", "wandb_value_2", "aws_value_3", "db_value_4", "gh_value_5", "pg_value_6",
    )


def test_a_token_that_is_a_urls_whole_userinfo_is_masked_whole() -> None:
    from skyward.secrets import mask_secrets

    token = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
    env = {"REPO": f"https://{token}@github.com/org/private.git"}
    assert env_secrets(env) == (token,)
    line = f"cloning https://{token}@github.com/org/private.git into ./src"
    assert mask_secrets(line) == "cloning https://***@github.com/org/private.git into ./src"


def test_a_login_name_in_a_url_is_not_taken_for_a_token() -> None:
    from skyward.secrets import mask_secrets

    assert env_secrets({"HOST": "ssh://ubuntu@10.0.0.1", "SITE": "https://docs@example.org/"}) == ()
    assert mask_secrets("ssh://ubuntu@10.0.0.1") == "ssh://ubuntu@10.0.0.1"


def test_pip_index_repr_hides_its_password() -> None:
    index = sky.PipIndex(url=INDEX_URL, packages=["private-lib"])
    assert repr(index) == "PipIndex(url='https://bob:***@index.example/simple', packages=('private-lib',))"
    assert INDEX_PASSWORD not in repr(sky.Image(pip_indexes=[index]))


def test_image_repr_hides_a_url_password_in_env() -> None:
    shown = repr(sky.Image(env=ENV))
    assert "'INDEX': 'https://alice:***@packages.example/simple'" in shown
    assert _leaked(shown) == []


def test_plan_script_holds_no_secret() -> None:
    index = sky.PipIndex(url=INDEX_URL, packages=["private-lib"])
    image = sky.Image(pip=["private-lib", "six"], pip_indexes=[index], env=ENV)
    script = sky.plan(provider=sky.Local(isolated=True), image=image).script
    assert "https://bob:***@index.example/simple" in script  # the index is there, its password is not
    assert _leaked(script) == []


# --- the client log's files -----------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path))
    reset_logging()
    structlog.reset_defaults()
    yield tmp_path
    reset_logging()


def test_a_log_file_and_folder_left_readable_are_made_private(home: Path) -> None:
    folder = home / "logs"
    folder.mkdir(mode=0o755)
    (folder / "skyward.log").write_text("an older run\n")
    os.chmod(folder, 0o755)
    os.chmod(folder / "skyward.log", 0o644)
    path = configure_logging(LogConfig(console=False))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_rotated_log_files_stay_private(home: Path) -> None:
    path = configure_logging(LogConfig(console=False, rotation="1 KB", retention=2))
    for i in range(40):
        structlog.get_logger("skyward.test").info("skyward.filler", n=i, text="x" * 100)
    for handler in logging.getLogger("skyward").handlers:
        handler.flush()
    files = sorted(path.parent.iterdir())
    assert len(files) == 3  # the live file and two rotated ones
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o600}


# --- files on a node ------------------------------------------------------------------------------


def _bootstrap(image: sky.Image, workdir: Path) -> tuple[list[Any], BaseException | None]:
    events: list[Any] = []
    setup = NodeSetup(
        image=image, ops=(), launch=LaunchCommand(entrypoint="python -m skyward.worker"),
        emit=events.append, bootstrap_timeout=240, secrets=env_secrets(image.env),
    )
    try:
        asyncio.run(prepare_node(LocalRunner(), setup, node=0, workdir=str(workdir), python=None))
    except BootstrapFailed as exc:
        return events, exc
    return events, None


def _event_strings(events: list[Any]) -> str:
    return "\n".join(
        value for event in events for field in attrs.fields(type(event))
        if isinstance(value := getattr(event, field.name), str)
    )


@pytest.fixture
def uv_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bootstrap tests' shared uv cache, so only the first run downloads anything."""
    cache = os.environ.get("UV_CACHE_DIR") or str(Path("~/.cache/skyward-tests/uv").expanduser())
    monkeypatch.setenv("UV_CACHE_DIR", cache)


@pytest.mark.timeout(300)
def test_a_private_index_install_keeps_its_password_in_a_private_file(
    uv_cache: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install reads the index URL, password included, from a file only the node's user reads
    (also when an older run left a readable one); its failure shows no password anywhere."""
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # the index is unreachable: fail at the first try
    workdir = tmp_path / "node"
    (workdir / "requirements").mkdir(parents=True)
    requirements = workdir / "requirements" / "pyproject.toml"
    requirements.write_text("an older run's\n")
    os.chmod(requirements, 0o644)
    unreachable = f"http://bob:{INDEX_PASSWORD}@127.0.0.1:9/simple"  # the discard port: refused at once
    index = sky.PipIndex(url=unreachable, packages=["private-lib"])
    image = sky.Image(pip=["private-lib"], pip_indexes=[index])
    events, failure = _bootstrap(image, workdir)
    assert isinstance(failure, BootstrapFailed) and failure.phase == "pip"
    assert INDEX_PASSWORD in requirements.read_text()
    assert stat.S_IMODE(requirements.stat().st_mode) == 0o600
    assert INDEX_PASSWORD not in str(failure) + _event_strings(events)


@pytest.mark.timeout(300)
def test_the_node_env_file_is_private_even_when_an_older_one_was_not(uv_cache: None, tmp_path: Path) -> None:
    workdir = tmp_path / "node"
    workdir.mkdir()
    (workdir / "env.sh").write_text("# an older run's\n")
    os.chmod(workdir / "env.sh", 0o644)
    events, failure = _bootstrap(sky.Image(env=ENV), workdir)
    assert failure is None
    assert TOKEN in (workdir / "env.sh").read_text()
    assert stat.S_IMODE((workdir / "env.sh").stat().st_mode) == 0o600
    assert _leaked(_event_strings(events)) == []
