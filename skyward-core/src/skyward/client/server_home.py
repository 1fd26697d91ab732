"""Where the pool server keeps its files, and how a client finds the server and its token.

Everything lives in `~/.skyward/server/` (`$SKYWARD_HOME/server/`), a folder made 0700:

- `token`: the bearer token every request must carry, written 0600 at each start;
- `server.json`: the running server's pid and its process's start time, host, port and URL
  (removed when it stops, also on SIGTERM);
- `server.log`: what a daemonized server printed (uvicorn's lines, Skyward's log is separate);
- `pools.db`: the SQLite database of the pools it holds (`skyward.server.store`).

A client finds the server at `--url`, else `$SKYWARD_SERVER_URL`, else the URL in `server.json`;
its token is `$SKYWARD_SERVER_TOKEN`, else the `token` file (a server on this machine).

A token is sent only to the server it came from (`Token.url`): the `token` file's to the URL in
`server.json`, `$SKYWARD_SERVER_TOKEN` to `$SKYWARD_SERVER_URL` when that is set. Pointing a command
at another server (`--url`) then fails before the token leaves, instead of handing this machine's
server's token to whoever listens there.

A pid alone does not say a process is the server: a server killed with SIGKILL leaves its
`server.json`, and the pid in it may be reused by any process. So `server.json` also records the
process's start time (field 22 of `/proc/<pid>/stat`), and a process is taken for the server only
when both match (`running_state`); where there is no `/proc` (macOS), the server itself is asked,
with the token, for its pid. `sky server stop` signals only a process taken for the server.
"""

from __future__ import annotations

import json
import os
import secrets
import ssl
import urllib.parse
from pathlib import Path
from typing import Any

from skyward.errors import ConfigurationError
from skyward.home import skyward_home

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


def clear_state(pid: Any) -> None:
    """Remove `server.json` if it is still this server's (a newer server may have replaced it)."""
    state = read_state()
    if state is not None and state.get("pid") == pid:
        state_path().unlink(missing_ok=True)


def process_start(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot: field 22 of `/proc/<pid>/stat`), or None
    where there is no `/proc` or no such process. With the pid, it names one process for good."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 else None  # fields[0] is field 3 (the state)


def alive(pid: int, started: str | None = None) -> bool:
    """Whether process `pid` runs (a zombie, dead but not yet reaped by its parent, does not) and,
    given `started` (`process_start`'s), is the process that started then, not a later one that
    was given the same pid."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return True  # no /proc (macOS): signal 0 is all there is
    if fields and fields[0] == "Z":
        return False
    return started is None or (len(fields) > 19 and fields[19] == started)


def running_state() -> dict[str, Any] | None:
    """The local server's `server.json` when the process it names is that server (see the module's
    doc), else None: a stale file names a dead server, or a process that merely got its pid."""
    state = read_state()
    if state is None:
        return None
    pid = int(state.get("pid", 0) or 0)
    recorded = state.get("process_start")
    if not alive(pid, recorded):
        return None
    if recorded is not None and process_start(pid) is not None:
        return state  # pid and start time both match: that process is the server
    return state if _answers_as(state, pid) else None


def _answers_as(state: dict[str, Any], pid: int) -> bool:
    """Whether the server at the state's URL takes this machine's token and says it is `pid`.

    A plain request of its own (`GET /v1/server`), not `server_api.Client`, which builds on this
    module: the two stay one layer each."""
    import http.client

    try:
        url = urllib.parse.urlsplit(str(state["url"]))
        token = token_path().read_text().strip()
        if url.scheme == "https":
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                url.hostname or "", url.port, timeout=5, context=tls_context(str(state["url"]))
            )
        else:
            connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=5)
        try:
            connection.request("GET", "/v1/server", headers={"Authorization": f"Bearer {token}"})
            answer = connection.getresponse()
            return answer.status == 200 and json.loads(answer.read()).get("pid") == pid
        finally:
            connection.close()
    except (OSError, KeyError, ValueError, http.client.HTTPException, ConfigurationError):
        return False


class Token(str):
    """A server token that knows the server it belongs to (`url`; None: any, the user said so)."""

    url: str | None = None

    @classmethod
    def bound(cls, value: str, url: str | None) -> Token:
        token = cls(value)
        token.url = url
        return token


def same_server(one: str, other: str) -> bool:
    """Whether two server URLs name the same server (scheme, host and port)."""
    a, b = urllib.parse.urlsplit(one), urllib.parse.urlsplit(other)
    try:
        ports = (a.port or _DEFAULT_PORTS.get(a.scheme), b.port or _DEFAULT_PORTS.get(b.scheme))
    except ValueError:
        return False
    hosts = ((a.hostname or "").lower(), (b.hostname or "").lower())
    return (a.scheme, hosts[0], ports[0]) == (b.scheme, hosts[1], ports[1])


_DEFAULT_PORTS = {"http": 80, "https": 443}


def tls_context(url: str) -> ssl.SSLContext | None:
    """For the local server over TLS (`server.json` names its certificate): a context that trusts
    that certificate alone, so a self-signed one works with no CA; None for any other server (the
    system's trust, and `$SSL_CERT_FILE`, apply)."""
    state = read_state()
    cert = state.get("tls_cert") if state else None
    if not cert or state is None or not same_server(str(state.get("url", "")), url):
        return None
    return pinned_context(str(cert))


def pinned_context(cert: str) -> ssl.SSLContext:
    """A client context trusting the certificate file `cert` alone (its own anchor, whatever the
    name the server is reached by: pinned, so the name is not what proves it)."""
    context = ssl.create_default_context(cafile=cert)
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.check_hostname = False
    return context


def server_url(url: str | None = None) -> str:
    """The server to talk to: `url`, else `$SKYWARD_SERVER_URL`, else the local server's."""
    chosen = url or os.environ.get(URL_ENV)
    if chosen:
        return chosen.rstrip("/")
    state = running_state()
    if state is None:
        raise ConfigurationError(
            "no Skyward server is running here: start one with `sky server start`, or point to one "
            f"with --url or {URL_ENV}"
        )
    return str(state["url"])


def server_token() -> Token:
    """The token to send: `$SKYWARD_SERVER_TOKEN`, else the local server's token file; bound to
    the server it belongs to (`Token.url`), to which alone the client sends it."""
    token = os.environ.get(TOKEN_ENV)
    if token:
        return Token.bound(token.strip(), os.environ.get(URL_ENV) or None)
    try:
        value = token_path().read_text().strip()
    except OSError:
        raise ConfigurationError(
            f"no server token: set {TOKEN_ENV}, or start a server here with `sky server start` "
            f"(it writes {token_path()})"
        ) from None
    state = read_state()
    return Token.bound(value, str(state["url"]) if state and state.get("url") else "")
