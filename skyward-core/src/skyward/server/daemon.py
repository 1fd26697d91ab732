"""Running the pool server: in this process (`serve`), or as a daemon (`spawn`) that outlives it.

`serve` binds the socket itself (port 0 picks a free one), so the port written to `server.json` is
the one listening, then writes a new token and runs uvicorn on that socket. uvicorn turns SIGTERM
and SIGINT into a graceful shutdown: the app's lifespan ends every pool before the process exits.

`spawn` starts `python -m skyward.server` in a new session (no terminal, no signals from the
shell that started it), its output appended to `server.log`, and waits until the server answers
on its URL with its token, or says why it could not start (the log's last lines).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from typing import Any

from skyward.client import server_home as home
from skyward.errors import ConfigurationError

#: How long `spawn` waits for a new server to answer.
START_TIMEOUT = 60.0


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ConfigurationError(
            f"cannot listen on {host}:{port} ({error.strerror}); pick another with --port, or --port 0"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def running() -> dict[str, Any] | None:
    """The local server's `server.json` when its process is alive."""
    state = home.read_state()
    if state is None or not home.alive(int(state.get("pid", 0))):
        return None
    return state


def serve(host: str = home.DEFAULT_HOST, port: int = 0, idle_timeout: float | None = None) -> None:
    """Run the server in this process until it is told to stop (SIGTERM, SIGINT, `sky server stop`)."""
    import uvicorn

    from skyward.observe.logging import configure_logging
    from skyward.server.app import create_app
    from skyward.server.pools import Pools
    from skyward.server.store import Store

    other = running()
    if other is not None and other.get("pid") != os.getpid():
        raise ConfigurationError(
            f"a Skyward server already runs here (pid {other['pid']}, {other['url']}); "
            "stop it with `sky server stop` first"
        )
    configure_logging()
    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound_port}"
    token = home.new_token()
    info = {"url": url, "host": host, "port": bound_port, "started": time.time()}
    pools = Pools(Store(home.database_path()), idle_timeout=idle_timeout)
    app = create_app(pools, token, info)
    config = uvicorn.Config(app, log_level="info", timeout_graceful_shutdown=10, lifespan="on")
    server = uvicorn.Server(config)
    app.starlette.state.server = server  # type: ignore[attr-defined] - `POST /v1/server/shutdown` stops it
    home.write_state({**info, "pid": os.getpid(), "log": str(home.log_path())})
    try:
        server.run(sockets=[sock])
    finally:
        home.clear_state(os.getpid())
        pools.store.close()
        sock.close()


def spawn(host: str, port: int, idle_timeout: float | None) -> dict[str, Any]:
    """Start a daemonized server; its `server.json` once it answers."""
    from skyward.client.server_api import Client, ServerError

    other = running()
    if other is not None:
        raise ConfigurationError(
            f"a Skyward server already runs here (pid {other['pid']}, {other['url']}); "
            "stop it with `sky server stop` first"
        )
    command = [sys.executable, "-m", "skyward.server", "--host", host, "--port", str(port)]
    if idle_timeout is not None:
        command += ["--idle-timeout", str(idle_timeout)]
    log = home.log_path()
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=descriptor, stderr=descriptor, start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(descriptor)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConfigurationError(f"the server did not start (exit {process.returncode}):\n{_tail(log)}")
        state = home.read_state()
        if state is not None and state.get("pid") == process.pid:
            try:
                Client(state["url"], home.server_token()).status()
                return state
            except (ServerError, ConfigurationError, OSError):
                pass
        time.sleep(0.1)
    raise ConfigurationError(
        f"the server did not answer within {START_TIMEOUT:.0f}s; see {log}:\n{_tail(log)}"
    )


def stop(timeout: float = 660.0) -> dict[str, Any] | None:
    """Stop the local server (its pools ended first); its `server.json`, or None if none ran."""
    from skyward.client.server_api import Client, ServerError

    state = running()
    if state is None:
        return None
    pid = int(state["pid"])
    try:
        Client(state["url"], home.server_token()).shutdown()
    except (ServerError, ConfigurationError, OSError):
        os.kill(pid, 15)  # it does not answer: SIGTERM is a graceful shutdown too
    deadline = time.monotonic() + timeout
    while home.alive(pid) and time.monotonic() < deadline:
        _reap_child(pid)
        time.sleep(0.1)
    if home.alive(pid):
        raise ConfigurationError(
            f"the server (pid {pid}) did not stop within {timeout:.0f}s; see {home.log_path()}"
        )
    home.clear_state(pid)
    return state


def _reap_child(pid: int) -> None:
    """A server this process spawned is its child: collect it, or it lingers as a zombie that is 'alive'."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _tail(path: Any, lines: int = 20) -> str:
    try:
        return "\n".join(open(path, errors="replace").read().splitlines()[-lines:])
    except OSError:
        return ""
