"""The `sky` command as a user runs it: a subprocess (`python -m skyward.cli`) in a clean world.

`Sky` (the `sky` fixture of conftest.py) runs the command with this test's own `$SKYWARD_HOME`, `$HOME` and
`$XDG_CONFIG_HOME` under `tmp_path`, in `tmp_path` as the working directory, and with no
credential of any cloud in its environment, so what a test sets is all the command sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Variables of this machine that would leak a credential, a config file or a proxy into `sky`.
CLEARED = (
    "SKYWARD_CONFIG", "SKYWARD_DISABLE_PLUGIN_AUTOLOAD", "RUNPOD_API_KEY", "VAST_API_KEY",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "HTTP_PROXY", "HTTPS_PROXY",
    "http_proxy", "https_proxy",
)


class Sky:
    """Runs `sky ARGS...`; `.json(...)` also checks the exit code and parses stdout."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "skyward-home"
        self.env: dict[str, str] = {k: v for k, v in os.environ.items() if k not in CLEARED}
        self.env.update(
            SKYWARD_HOME=str(self.home), HOME=str(root / "user"),
            XDG_CONFIG_HOME=str(root / "user" / ".config"), AWS_CONFIG_FILE=str(root / "aws-config"),
            AWS_SHARED_CREDENTIALS_FILE=str(root / "aws-credentials"),
            AWS_EC2_METADATA_DISABLED="true", NO_PROXY="127.0.0.1,localhost", COLUMNS="200",
        )

    def __call__(self, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "skyward.cli", *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=self.root, env={**self.env, **env}
        )

    def lacking_a_provider(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """`sky ARGS...` on a machine without one provider package Skyward knows (`skyward-nimbus`)."""
        command = [sys.executable, str(Path(__file__).with_name("sky_with_unpublished_provider.py")), *args]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, cwd=self.root, env={**self.env, **env}
        )

    def json(self, *args: str, **env: str) -> Any:
        done = self(*args, "--json", **env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def no_traceback(done: subprocess.CompletedProcess[str]) -> bool:
    return "Traceback" not in done.stderr and "Traceback" not in done.stdout


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@contextmanager
def beside_theirs(machines: dict[str, Any], theirs: dict[str, Any], what: str) -> Iterator[None]:
    """Someone else's machine (`theirs`, kept by its "id") in a fake cloud's account, as `sky ls` and
    `sky down` find it there; at the end it must be there still, untouched."""
    machines[theirs["id"]] = theirs
    yield
    assert machines.pop(theirs["id"], None) == theirs, f"someone else's {what} was touched"
