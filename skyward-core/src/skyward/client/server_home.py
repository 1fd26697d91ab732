"""Where the pool server keeps its files, and how a client finds the server and its token.

Everything lives in `~/.skyward/server/` (`$SKYWARD_HOME/server/`), a folder made 0700:

- `token`: the bearer token every request must carry, written 0600 at each start;
- `server.json`: the running server's pid, host, port and URL (removed when it stops);
- `server.log`: what a daemonized server printed (uvicorn's lines, Skyward's log is separate);
- `pools.db`: the SQLite database of the pools it holds (`skyward.server.store`).

A client finds the server at `--url`, else `$SKYWARD_SERVER_URL`, else the URL in `server.json`;
its token is `$SKYWARD_SERVER_TOKEN`, else the `token` file (a server on this machine).
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from skyward.errors import ConfigurationError
from skyward.observe.logging import skyward_home

URL_ENV = "SKYWARD_SERVER_URL"
TOKEN_ENV = "SKYWARD_SERVER_TOKEN"
DEFAULT_HOST = "127.0.0.1"


def folder() -> Path:
    """The server's folder, created 0700 (and made 0700 if it already exists)."""
    path = skyward_home() / "server"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def token_path() -> Path:
    return folder() / "token"


def state_path() -> Path:
    return folder() / "server.json"


def log_path() -> Path:
    return folder() / "server.log"


def database_path() -> Path:
    return folder() / "pools.db"


def new_token() -> str:
    """A fresh token, written to the token file before anyone can read it (created 0600)."""
    token = secrets.token_urlsafe(32)
    path = token_path()
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
    return token


def write_state(state: dict[str, Any]) -> None:
    path = state_path()
    temporary = path.with_suffix(".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(state, file)
    os.replace(temporary, path)


def read_state() -> dict[str, Any] | None:
    """The running server's `server.json`, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads(state_path().read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def clear_state(pid: int) -> None:
    """Remove `server.json` if it is still this server's (a newer server may have replaced it)."""
    state = read_state()
    if state is not None and state.get("pid") == pid:
        state_path().unlink(missing_ok=True)


def alive(pid: int) -> bool:
    """Whether process `pid` runs; a zombie (dead, not yet reaped by its parent) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): signal 0 is all there is


def server_url(url: str | None = None) -> str:
    """The server to talk to: `url`, else `$SKYWARD_SERVER_URL`, else the local server's."""
    chosen = url or os.environ.get(URL_ENV)
    if chosen:
        return chosen.rstrip("/")
    state = read_state()
    if state is None or not alive(int(state.get("pid", 0))):
        raise ConfigurationError(
            "no Skyward server is running here: start one with `sky server start`, or point to one "
            f"with --url or {URL_ENV}"
        )
    return str(state["url"])


def server_token() -> str:
    """The token to send: `$SKYWARD_SERVER_TOKEN`, else the local server's token file."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return token.strip()
    try:
        return token_path().read_text().strip()
    except OSError:
        raise ConfigurationError(
            f"no server token: set {TOKEN_ENV}, or start a server here with `sky server start` "
            f"(it writes {token_path()})"
        ) from None
