"""`sky server start|stop|status`: the pool server that keeps pools warm between scripts.

`start` daemonizes the server (`--foreground` keeps it attached to the terminal, for a container
or a process supervisor) on 127.0.0.1 unless `--host` says otherwise. It writes a fresh bearer token to
`~/.skyward/server/token` (0600) and its pid, URL and port to `server.json` beside it; every
`sky compute` command reads both. `stop` ends every pool the server holds, then the server.
See docs/server.md, and skyward/server/ for the server itself.
"""

from __future__ import annotations

import datetime
from typing import Any

import click

from skyward.cli.output import draw, emit_json, json_option, table
from skyward.client import server_home as home

#: The port `sky server start` listens on unless told otherwise (`--port 0`: any free port).
DEFAULT_PORT = 8470

url_option = click.option(
    "--url", default=None, metavar="URL",
    help=f"The server to talk to (default: ${home.URL_ENV}, else the one started here).",
)


@click.group("server")
def server() -> None:
    """The pool server: start it, stop it, see it (docs/server.md)."""


@server.command("start")
@click.option("--host", default=home.DEFAULT_HOST, show_default=True,
              help="The address to listen on; anything but 127.0.0.1 lets other machines in, and "
                   "needs --tls-cert/--tls-key or --expose plain-http.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535),
              help="The port to listen on; 0 picks a free one.")
@click.option("--idle-timeout", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="End a pool no script has used for this long (default: never).")
@click.option("--foreground", is_flag=True, help="Stay attached (logs on stderr; Ctrl-C stops the server).")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Serve HTTPS with this certificate (with --tls-key).")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The certificate's private key.")
@click.option("--expose", type=click.Choice(["plain-http"]), default=None,
              help="Listen on a non-loopback --host over plain HTTP: the token and the pickled calls, "
                   "which run code in the server, cross the network readable.")
@click.option("--max-calls", type=click.IntRange(min=1), default=None,
              help="Calls and runs in flight at once; one more is answered 429 (default 64).")
@json_option
def start(
    host: str, port: int, idle_timeout: float | None, foreground: bool, tls_cert: str | None,
    tls_key: str | None, expose: str | None, max_calls: int | None, as_json: bool,
) -> None:
    """Start the pool server (a daemon unless --foreground); prints its URL."""
    from skyward.server import daemon

    options = {"tls_cert": tls_cert, "tls_key": tls_key, "expose": expose, "max_calls": max_calls}
    if foreground:
        daemon.serve(host, port, idle_timeout, **options)
        return
    state = daemon.spawn(host, port, idle_timeout, **options)
    if as_json:
        emit_json(state)
    else:
        click.echo(f"Skyward server running at {state['url']} (pid {state['pid']}); "
                   f"token in {home.token_path()}, log in {home.log_path()}")


@server.command("stop")
@json_option
def stop(as_json: bool) -> None:
    """Stop the local server, ending every pool it holds first."""
    from skyward.server import daemon

    state = daemon.stop()
    if as_json:
        emit_json({"stopped": state is not None, "pid": None if state is None else state["pid"]})
    elif state is None:
        click.echo("No Skyward server is running here.")
    else:
        click.echo(f"Skyward server (pid {state['pid']}) stopped.")


@server.command("status")
@url_option
@json_option
def status(url: str | None, as_json: bool) -> None:
    """Whether a server is running, where, and how many pools it holds (exit 1 when none runs)."""
    from skyward.client.server_api import Client

    info: dict[str, Any] = Client(home.server_url(url), home.server_token()).status()
    if as_json:
        emit_json(info)
        return
    started = datetime.datetime.fromtimestamp(info["started"]).isoformat(timespec="seconds")
    idle = "never" if info.get("idle_timeout") is None else f"{info['idle_timeout']:g}s"
    rows = [("url", info["url"]), ("pid", info["pid"]), ("version", info["version"]),
            ("started", started), ("pools", info["pools"]), ("idle timeout", idle)]
    draw(table("Skyward server", ("field", "value"), rows))
