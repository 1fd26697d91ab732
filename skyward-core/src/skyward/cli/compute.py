"""`sky compute create|list|get|delete|run`: pools held by the pool server, used from the shell.

A pool is created from `[pools.NAME]` of skyward.toml (found as `sky.Compute(name=NAME)` finds it,
with `[defaults]` under it and a named provider replaced by its table), or inline from flags
(`--provider local --nodes 2 --pip numpy`); flags given beside a table are laid over it. This
machine builds the table and the server builds the pool from it, so the server needs no copy of
the project. `run` sends a script, streams what it prints as it prints it, and exits with its
exit code. See docs/server.md (people) and docs/agents.md (agents).
"""

from __future__ import annotations

import datetime
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from skyward.cli.output import (
    Table,
    console,
    draw,
    emit_json,
    json_option,
    note,
    rich_table,
    stdout_is_terminal,
    table,
)
from skyward.cli.server import url_option
from skyward.client import server_home as home
from skyward.client.server_api import Client
from skyward.errors import ConfigurationError

#: How long `create` waits for a pool to be ready unless --timeout says otherwise.
CREATE_TIMEOUT = 1800.0


def _client(url: str | None) -> Client:
    return Client(home.server_url(url), home.server_token())


def _value(text: str) -> Any:
    """A flag's value as TOML would read it (`2`, `true`, `["a", "b"]`), else the text itself."""
    try:
        return tomllib.loads(f"value = {text}")["value"]
    except tomllib.TOMLDecodeError:
        return text


def pool_table(name: str, inline: dict[str, Any], provider_options: tuple[str, ...],
               config_path: str | None) -> dict[str, Any]:
    """The table the server builds pool `name` from: `[pools.NAME]` with the flags laid over it."""
    from skyward.config import find_config, load_config

    found = Path(config_path) if config_path else find_config()
    config = load_config(found) if found is not None else None
    if config is not None and name in config.pools:
        table_ = config.table(name)
    elif inline.get("provider") is None:
        where = f"in {found}" if found is not None else "(no skyward.toml found here or above)"
        raise ConfigurationError(
            f"no [pools.{name}] {where}: add that table, or say what to create, "
            f"e.g. `sky compute create {name} --provider local`"
        )
    else:
        table_ = {}
    provider = inline.pop("provider", None)
    if provider is not None:
        named = config.providers if config is not None else {}
        table_["provider"] = dict(named[provider]) if provider in named else {"type": provider}
    region = inline.pop("region", None)
    if provider_options or region is not None:
        current = table_.get("provider")
        current = {"type": current} if isinstance(current, str) else dict(current or {"type": "local"})
        if region is not None:
            current["region"] = region
        for item in provider_options:
            key, sep, text = item.partition("=")
            if not sep or not key:
                raise click.BadParameter(f"{item!r}: write KEY=VALUE", param_hint="--provider-option")
            current[key.strip()] = _value(text.strip())
        table_["provider"] = current
    image = dict(table_.get("image", {}))
    for key in ("pip", "apt"):
        values = inline.pop(key)
        if values:
            image[key] = [*image.get(key, []), *values]
    python = inline.pop("python", None)
    if python is not None:
        image["python"] = python
    if image:
        table_["image"] = image
    table_.update({key: value for key, value in inline.items() if value is not None})
    return table_


@click.group("compute")
def compute() -> None:
    """Pools the server holds: create, list, get, run scripts on, delete (docs/server.md)."""


@compute.command("create")
@click.argument("name")
@click.option("--provider", default=None, metavar="NAME", help="local, ssh, aws, ... or a [providers.NAME].")
@click.option("--nodes", type=click.IntRange(min=1), default=None, help="How many nodes.")
@click.option("--accelerator", default=None, metavar="NAME", help="e.g. A100, L4, T4.")
@click.option("--region", default=None, metavar="REGION", help="The provider's region.")
@click.option("--allocation", default=None, metavar="KIND", help="spot, on-demand, spot-if-available...")
@click.option("--pip", multiple=True, metavar="PACKAGE", help="A pip package for the image (repeatable).")
@click.option("--apt", multiple=True, metavar="PACKAGE", help="An apt package for the image (repeatable).")
@click.option("--python", default=None, metavar="VERSION", help="The image's Python, e.g. 3.12.")
@click.option("--provider-option", "provider_options", multiple=True, metavar="KEY=VALUE",
              help='A provider field, its value as in TOML: \'hosts=["10.0.0.5"]\' (repeatable).')
@click.option("--config", "config_path", default=None, metavar="PATH", help="The skyward.toml to read.")
@click.option("--no-wait", is_flag=True, help="Return once the server took the pool, not once it is ready.")
@click.option("--timeout", type=click.FloatRange(min=1), default=CREATE_TIMEOUT, show_default=True,
              metavar="SECONDS", help="How long to wait for the pool to be ready.")
@url_option
@json_option
def create(name: str, provider: str | None, nodes: int | None, accelerator: str | None, region: str | None,
           allocation: str | None, pip: tuple[str, ...], apt: tuple[str, ...], python: str | None,
           provider_options: tuple[str, ...], config_path: str | None, no_wait: bool, timeout: float,
           url: str | None, as_json: bool) -> None:
    """Create the pool NAME on the server and wait until its nodes are ready."""
    inline = {"provider": provider, "nodes": nodes, "accelerator": accelerator, "region": region,
              "allocation": allocation, "pip": list(pip), "apt": list(apt), "python": python}
    client = _client(url)
    described = client.create(name, pool_table(name, inline, provider_options, config_path))
    deadline = time.monotonic() + timeout
    while not no_wait and described["state"] == "starting" and time.monotonic() < deadline:
        described = client.get(name, wait=min(30.0, max(deadline - time.monotonic(), 0.1)))
    if as_json:
        emit_json(described)
    else:
        _show([described])
    if described["state"] == "failed":
        raise click.ClickException(f"pool {name!r} did not start: {described['error']}")
    if not no_wait and described["state"] != "ready":
        raise click.ClickException(f"pool {name!r} is still {described['state']} after {timeout:.0f}s")


def _pools_table(pools: list[dict[str, Any]]) -> Table:
    """One pool a row; its name (column 0) is what every other command takes, never folded."""
    styles = {"ready": "green", "failed": "red", "starting": "yellow", "stopping": "yellow"}
    rows = []
    for pool in pools:
        state = Text(pool["state"], style=styles.get(pool["state"], ""))
        idle = datetime.timedelta(seconds=int(max(time.time() - pool["last_used"], 0)))
        rows.append((pool["name"], state, pool["provider"], pool["nodes"], pool["accelerator"] or "",
                     pool["running"], str(idle), pool["error"] or ""))
    return table("Pools", ("name", "state", "provider", "nodes", "accelerator", "running", "idle", "error"),
                 rows, whole=(0,))


def _show(pools: list[dict[str, Any]]) -> None:
    draw(_pools_table(pools))


@compute.command("list")
@url_option
@json_option
def list_(url: str | None, as_json: bool) -> None:
    """Every pool the server holds."""
    pools = _client(url).pools()
    if as_json:
        emit_json({"pools": pools})
    elif pools:
        _show(pools)
    else:
        note("The server holds no pool; create one with `sky compute create NAME`.")


@compute.command("get")
@click.argument("name")
@url_option
@json_option
def get(name: str, url: str | None, as_json: bool) -> None:
    """One pool: its state, nodes, and the table it was built from (with --json)."""
    pool = _client(url).get(name)
    if as_json:
        emit_json(pool)
    else:
        _show([pool])


@compute.command("delete")
@click.argument("name")
@url_option
@json_option
def delete(name: str, url: str | None, as_json: bool) -> None:
    """End the pool NAME: its machines are released, and the server forgets it."""
    _client(url).delete(name)
    if as_json:
        emit_json({"deleted": name})
    else:
        click.echo(f"Pool {name} deleted.")


@compute.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("name")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--node", default="head", show_default=True, metavar="head|all|RANK",
              help="Where to run: the head node, every node, or one node by rank.")
@url_option
def run(name: str, script: Path, args: tuple[str, ...], node: str, url: str | None) -> None:
    """Run SCRIPT on the pool NAME as __main__ with ARGS as sys.argv[1:].

    Options go before NAME: everything after SCRIPT is the script's (`sky compute run --node all
    dev train.py --epochs 3`).

    What it prints comes back as it prints it (stdout to stdout, stderr to stderr; with --node all
    each line starts with its node), and the command exits with the script's exit code.
    """
    source = script.read_text(encoding="utf-8")
    pending: dict[tuple[int, str], str] = {}
    code = 1
    for message in _client(url).run(name, script.name, source, list(args), node):
        if "exit" in message:
            code = int(message["exit"])
            continue
        stream = sys.stderr if message["stream"] == "stderr" else sys.stdout
        if node != "all":
            stream.write(message["data"])
            stream.flush()
            continue
        key = (message["node"], message["stream"])
        *lines, pending[key] = (pending.get(key, "") + message["data"]).split("\n")
        for line in lines:
            stream.write(f"[node {message['node']}] {line}\n")
        stream.flush()
    for (rank, kind), rest in pending.items():
        if rest:
            (sys.stderr if kind == "stderr" else sys.stdout).write(f"[node {rank}] {rest}\n")
    sys.stdout.flush()
    sys.exit(code)


@compute.command("upload")
@click.argument("name")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.argument("destination", default=".")
@click.option("--node", default="all", show_default=True, metavar="head|all|RANK",
              help="Which nodes receive it.")
@url_option
@json_option
def upload(name: str, source: Path, destination: str, node: str, url: str | None, as_json: bool) -> None:
    """Copy SOURCE (a file or a folder) into the folder DESTINATION on the pool's nodes.

    A relative DESTINATION is relative to the worker's working folder (where a task's relative
    paths point); SOURCE arrives under its own name: `upload dev data/ inputs` makes inputs/data/.
    """
    import tempfile

    from skyward.server.files import pack_file

    with tempfile.TemporaryFile(prefix="skyward-upload-") as archive:  # on disk, never whole in memory
        pack_file(str(source), archive)
        archive.seek(0)
        written = _client(url).upload(name, archive, destination, node)
    if as_json:
        emit_json({"written": written})
        return
    for rank, paths in sorted(written.items(), key=lambda item: int(item[0])):
        click.echo(f"node {rank}: {len(paths)} path(s) under {paths[0] if paths else destination}")


@compute.command("download")
@click.argument("name")
@click.argument("source")
@click.argument("destination", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--node", default="head", show_default=True, metavar="head|RANK", help="The node to copy from.")
@url_option
@json_option
def download(name: str, source: str, destination: Path, node: str, url: str | None, as_json: bool) -> None:
    """Copy SOURCE (a file or a folder on a node) into the local folder DESTINATION."""
    from skyward.server.files import unpack_chunks

    written = unpack_chunks(_client(url).download(name, source, node), str(destination))
    if as_json:
        emit_json({"written": written})
    else:
        click.echo(f"{len(written)} path(s) under {written[0] if written else destination}")


def _view_tables(view: dict[str, Any]) -> list[Table]:
    """The pool, a table of each node's latest metrics, and its last events."""
    from skyward.cli.log import event_summary, utc_time

    drawn = []
    names = sorted({metric for samples in view["metrics"].values() for metric in samples})
    if names:
        rows = []
        for node, samples in sorted(view["metrics"].items(), key=lambda item: int(item[0])):
            cells = [samples.get(n) for n in names]
            rows.append((node, *("" if c is None else f"{c['value']:.4g}{c['unit']}" for c in cells)))
        drawn.append(table("Metrics (latest)", ("node", *names), rows))
    events = [(utc_time(e["time"]), e["type"], event_summary(e["data"])) for e in view["events"]]
    drawn.append(table("Events (last 20, UTC)", ("time", "event", "details"), events))
    return drawn


def _print_views(client: Client, name: str, once: bool, interval: float) -> None:
    """Snapshots printed one after the other (an empty line between two), until Ctrl-C: what a
    pipe or a file gets instead of rich's live display, which redraws a terminal in place."""
    try:
        while True:
            snapshot = client.view(name)
            draw(_pools_table([snapshot["pool"]]), *_view_tables(snapshot))
            if once:
                return
            click.echo()
            time.sleep(interval)
    except KeyboardInterrupt:
        return


@compute.command("view")
@click.argument("name")
@click.option("--once", is_flag=True, help="Print one snapshot and exit (else refresh until Ctrl-C).")
@click.option("--interval", type=click.FloatRange(min=0.2), default=2.0, show_default=True, metavar="SECONDS",
              help="How often to refresh.")
@url_option
@json_option
def view(name: str, once: bool, interval: float, url: str | None, as_json: bool) -> None:
    """Watch the pool NAME live: its state, each node's latest metrics, its last events.

    With --json, one JSON document per refresh (one only with --once); piped, the plain tables
    of each refresh, an empty line between two.
    """
    from rich.console import Group
    from rich.live import Live

    client = _client(url)
    if as_json:
        while True:
            emit_json(client.view(name))
            if once:
                return
            time.sleep(interval)
    if once or not stdout_is_terminal():
        _print_views(client, name, once, interval)
        return

    def frame() -> Any:
        snapshot = client.view(name)
        pool = snapshot["pool"]
        head = Text(f"{pool['name']}: {pool['state']}, {pool['nodes']} node(s), {pool['running']} running")
        return Group(head, *(rich_table(drawn) for drawn in _view_tables(snapshot)))

    with Live(frame(), console=console(), refresh_per_second=4) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(frame())
        except KeyboardInterrupt:
            return
