"""Running the pool server: in this process (`serve`), or as a daemon (`spawn`) that outlives it.

`serve` binds the socket itself (port 0 picks a free one), so the port written to `server.json` is
the one listening, then writes a new token and runs uvicorn on that socket. uvicorn turns SIGTERM
and SIGINT into a graceful shutdown: the app's lifespan ends every pool, then removes
`server.json` (uvicorn re-raises the signal after the lifespan, so nothing after `server.run`
would run). `server.json` records the process's start time beside its pid: `stop` signals a
process only when both match (`server_home.running_state`), never one that reused a dead server's pid.

`spawn` starts `python -m skyward.server` in a new session (no terminal, no signals from the
shell that started it), its output appended to `server.log`, and waits until the server answers
on its URL with its token, or says why it could not start (the log's last lines).

**Exposure.** Whoever holds the token runs code in the server process (a call's pickle is
unpickled there) and on its pools. On loopback that is the user alone. Any other `--host` is
refused unless the server speaks TLS (`$SKYWARD_SERVER_TLS_CERT` and `$SKYWARD_SERVER_TLS_KEY`,
PEM files) or the user opts in to plain HTTP by saying so: `SKYWARD_SERVER_EXPOSE=plain-http`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import structlog

from skyward.client import server_home as home
from skyward.errors import ConfigurationError

#: How long `spawn` waits for a new server to answer.
START_TIMEOUT = 60.0
TLS_CERT_ENV = "SKYWARD_SERVER_TLS_CERT"
TLS_KEY_ENV = "SKYWARD_SERVER_TLS_KEY"
EXPOSE_ENV = "SKYWARD_SERVER_EXPOSE"
#: The value of `$SKYWARD_SERVER_EXPOSE` that accepts serving a non-loopback host over plain HTTP.
PLAIN_HTTP = "plain-http"
#: The longest incomplete HTTP event (a request head) the server buffers (h11's limit).
MAX_REQUEST_HEAD = 64 * 1024


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


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is this machine's loopback (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in found)


def check_exposure(host: str, tls: bool, expose: str | None) -> None:
    """Refuse a host other machines can reach, over plain HTTP, unless the user opted in to it."""
    if tls or is_loopback(host) or (expose or "").strip().lower() == PLAIN_HTTP:
        return
    raise ConfigurationError(
        f"--host {host} would open the pool server to the network over plain HTTP: anyone who can "
        f"reach {host} and has the token (which travels in clear, as does every call's pickle, unpickled "
        "in the server) runs code in the server process, as you, and on your pools. Keep the default "
        "127.0.0.1 and reach it through a tunnel (ssh -L 8470:127.0.0.1:8470 this-host), or serve TLS "
        f"(--tls-cert cert.pem --tls-key key.pem, or {TLS_CERT_ENV}/{TLS_KEY_ENV}), or accept plain "
        f"HTTP (--expose {PLAIN_HTTP}, or {EXPOSE_ENV}={PLAIN_HTTP})"
    )


def _tls(tls_cert: str | None, tls_key: str | None) -> tuple[str | None, str | None]:
    """The TLS certificate and key: given, else from the environment; both or neither."""
    cert = tls_cert or os.environ.get(TLS_CERT_ENV) or None
    key = tls_key or os.environ.get(TLS_KEY_ENV) or None
    if bool(cert) != bool(key):
        raise ConfigurationError(
            f"TLS needs a certificate and its key: set both {TLS_CERT_ENV} and {TLS_KEY_ENV}"
        )
    for path in (cert, key):
        if path is not None and not os.path.isfile(path):
            raise ConfigurationError(f"{path}: no such file (the server's TLS certificate or key)")
    return (os.path.abspath(cert), os.path.abspath(key)) if cert and key else (None, None)


def running() -> dict[str, Any] | None:
    """The local server's `server.json` when its process is alive and is that server."""
    return home.running_state()


def serve(host: str = home.DEFAULT_HOST, port: int = 0, idle_timeout: float | None = None, *,
          tls_cert: str | None = None, tls_key: str | None = None, expose: str | None = None,
          max_calls: int | None = None) -> None:
    """Run the server in this process until it is told to stop (SIGTERM, SIGINT, `sky server stop`)."""
    import uvicorn

    from skyward.observe.logging import configure_logging
    from skyward.server.app import create_app
    from skyward.server.limits import IdleClosingH11Protocol, Limits
    from skyward.server.pools import Pools
    from skyward.server.store import Store

    cert, key = _tls(tls_cert, tls_key)
    check_exposure(host, cert is not None, expose if expose is not None else os.environ.get(EXPOSE_ENV))
    limits = Limits.from_environment(max_calls=max_calls)
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
    url = f"{'https' if cert else 'http'}://{shown}:{bound_port}"
    if not cert and not is_loopback(host):
        exposes = "code execution in the server and on its pools, over plain HTTP"
        structlog.get_logger().warning("skyward.server_exposed", url=url, exposes=exposes)
    token = home.new_token()
    info = {"url": url, "host": host, "port": bound_port, "started": time.time()}
    pools = Pools(Store(home.database_path()), idle_timeout=idle_timeout)
    pid = os.getpid()
    app = create_app(pools, token, info, limits, on_stopped=lambda: home.clear_state(pid))
    config = uvicorn.Config(
        app, log_level="info", timeout_graceful_shutdown=10, lifespan="on", http=IdleClosingH11Protocol,
        timeout_keep_alive=limits.idle_connection, limit_concurrency=limits.max_connections,
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD, ssl_certfile=cert, ssl_keyfile=key,
    )
    server = uvicorn.Server(config)
    app.starlette.state.server = server  # type: ignore[attr-defined] - `POST /v1/server/shutdown` stops it
    home.write_state({**info, "pid": pid, "process_start": home.process_start(pid),
                      "log": str(home.log_path()), "tls_cert": cert})
    try:
        server.run(sockets=[sock])
    finally:
        home.clear_state(pid)
        pools.store.close()
        sock.close()


def spawn(host: str, port: int, idle_timeout: float | None, *, tls_cert: str | None = None,
          tls_key: str | None = None, expose: str | None = None, max_calls: int | None = None
          ) -> dict[str, Any]:
    """Start a daemonized server; its `server.json` once it answers."""
    cert, key = _tls(tls_cert, tls_key)
    expose = expose if expose is not None else os.environ.get(EXPOSE_ENV)
    check_exposure(host, cert is not None, expose)  # refused here, before a process is started
    other = running()
    if other is not None:
        raise ConfigurationError(
            f"a Skyward server already runs here (pid {other['pid']}, {other['url']}); "
            "stop it with `sky server stop` first"
        )
    command = [sys.executable, "-m", "skyward.server", "--host", host, "--port", str(port)]
    if idle_timeout is not None:
        command += ["--idle-timeout", str(idle_timeout)]
    if cert and key:
        command += ["--tls-cert", cert, "--tls-key", key]
    if expose:
        command += ["--expose", expose]
    if max_calls is not None:
        command += ["--max-calls", str(max_calls)]
    log = home.log_path()
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=descriptor, stderr=descriptor, start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(descriptor)
    return _wait_started(process, log, cert)


def _wait_started(process: subprocess.Popen[bytes], log: Any, cert: str | None) -> dict[str, Any]:
    from skyward.client.server_api import Client, ServerError

    context = home.pinned_context(cert) if cert else None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ConfigurationError(f"the server did not start (exit {process.returncode}):\n{_tail(log)}")
        state = home.read_state()
        if state is not None and state.get("pid") == process.pid:
            try:
                Client(state["url"], home.token_path().read_text().strip(), context=context).status()
                return state
            except (ServerError, ConfigurationError, OSError):
                pass
        time.sleep(0.1)
    raise ConfigurationError(
        f"the server did not answer within {START_TIMEOUT:.0f}s; see {log}:\n{_tail(log)}"
    )


def stop(timeout: float = 660.0) -> dict[str, Any] | None:
    """Stop the local server (its pools ended first); its `server.json`, or None if none ran.

    A `server.json` that names no running server (the server was killed; its pid may now be any
    other process's) is removed, and nothing is signalled."""
    from skyward.client.server_api import Client, ServerError

    state = running()
    if state is None:
        stale = home.read_state()
        if stale is not None:
            home.clear_state(stale.get("pid", 0))
        return None
    pid, started = int(state["pid"]), state.get("process_start")
    try:
        Client(state["url"], home.token_path().read_text().strip(), context=_context(state)).shutdown()
    except (ServerError, ConfigurationError, OSError):
        if home.alive(pid, started):
            os.kill(pid, signal.SIGTERM)  # it does not answer: SIGTERM is a graceful shutdown too
    deadline = time.monotonic() + timeout
    while home.alive(pid, started) and time.monotonic() < deadline:
        _reap_child(pid)
        time.sleep(0.1)
    if home.alive(pid, started):
        raise ConfigurationError(
            f"the server (pid {pid}) did not stop within {timeout:.0f}s; see {home.log_path()}"
        )
    home.clear_state(pid)
    return state


def _context(state: dict[str, Any]) -> Any:
    cert = state.get("tls_cert")
    return home.pinned_context(str(cert)) if cert else None


def _reap_child(pid: int) -> None:
    """A server this process spawned is its child: collect it, or it lingers as a zombie that is 'alive'."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _tail(path: Any, lines: int = 20) -> str:
    try:
        return "\n".join(open(path, errors="replace").read().splitlines()[-lines:])
    except OSError:
        return ""
