"""`sky log NAME`: the history of a pool the pool server holds (or held): JSON lines, Markdown, ipynb.

The server keeps, per pool name, every run (`sky compute run`, and each call of a script attached
with `sky.Compute(name=...)`: what ran, its arguments, node, start, end, exit code) and the pool's
lifecycle events (requested, provisioned, ready, lost, shut down...; not its output lines nor its
metric samples). They outlive the pool: `sky log` works after `sky compute delete` too.
(`sky logs`, with an s, is Skyward's own log file on this machine.)
"""

from __future__ import annotations

import datetime
import json
import pprint
from pathlib import Path
from typing import Any

import click

from skyward.cli.server import url_option
from skyward.client import server_home as home
from skyward.client.server_api import Client

#: Event fields left out of the Markdown summary (the pool is the page's, an instance is long).
_QUIET = ("pool", "instance", "time", "timestamp")


def utc_time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def records(history: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per line of the JSON lines export: the pool (when held), then runs and events by time."""
    lines: list[dict[str, Any]] = []
    if history.get("pool") is not None:
        lines.append({"kind": "pool", **history["pool"]})
    timed = [{"kind": "run", "time": r["started"], **r} for r in history["runs"]]
    timed += [{"kind": "event", **e} for e in history["events"]]
    return lines + sorted(timed, key=lambda record: record["time"])


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def event_summary(data: dict[str, Any]) -> str:
    shown = {k: v for k, v in data.items() if k not in _QUIET and v not in (None, "", [], {})}
    text = ", ".join(f"{k}={_value(v)}" for k, v in shown.items())
    return text if len(text) <= 120 else text[:117] + "..."


def markdown(history: dict[str, Any]) -> str:
    """The history as a Markdown page: the pool, a table of runs, a table of events."""
    name = history["name"]
    out = [f"# Pool `{name}`", ""]
    pool = history.get("pool")
    if pool is not None:
        out += [f"- state: {pool['state']}", f"- provider: {pool['provider']}",
                f"- nodes: {pool['nodes']}", f"- created: {utc_time(pool['created'])} UTC", ""]
    else:
        out += ["The server no longer holds this pool; its history remains.", ""]
    out += ["## Runs", ""]
    if history["runs"]:
        out += ["| # | what | arguments | node | started (UTC) | seconds | exit |",
                "|---|---|---|---|---|---|---|"]
        for run in history["runs"]:
            took = "" if run["ended"] is None else f"{run['ended'] - run['started']:.2f}"
            code = "running" if run["exit_code"] is None else run["exit_code"]
            out.append(f"| {run['id']} | {_cell(run['script'])} | {_cell(' '.join(run['argv']))} "
                       f"| {run['node']} | {utc_time(run['started'])} | {took} | {code} |")
    else:
        out.append("No runs.")
    out += ["", "## Events", ""]
    if history["events"]:
        out += ["| time (UTC) | event | details |", "|---|---|---|"]
        out += [f"| {utc_time(e['time'])} | {e['type']} | {_cell(event_summary(e['data']))} |"
                for e in history["events"]]
    else:
        out.append("No events.")
    return "\n".join(out) + "\n"


def notebook(history: dict[str, Any]) -> str:
    """The Markdown page as a Jupyter notebook (nbformat 4): a markdown cell per section, and a
    code cell holding the history as data, to be read with pandas or plain Python."""
    page = markdown(history)
    sections = ["## " + part if i else part for i, part in enumerate(page.split("\n## "))]
    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "metadata": {}, "source": section.strip().splitlines(keepends=True)}
        for section in sections
    ]
    data = pprint.pformat({"runs": history["runs"], "events": history["events"]}, width=100, sort_dicts=False)
    cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                  "source": f"history = {data}\n".splitlines(keepends=True)})
    document = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
                "cells": cells}
    return json.dumps(document, indent=1) + "\n"


@click.command("log")
@click.argument("name")
@click.option("--format", "form", type=click.Choice(["jsonl", "markdown", "ipynb"]), default=None,
              help="JSON lines (a record a line: pool, runs, events), Markdown, or a notebook; "
              "default: from --output's suffix (.md, .ipynb), else jsonl.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of stdout.")
@url_option
def log(name: str, form: str | None, output: Path | None, url: str | None) -> None:
    """Export the history of pool NAME from the server: runs with timing and exit codes, and events."""
    history = Client(home.server_url(url), home.server_token()).history(name)
    if form is None:
        suffix = output.suffix.lower() if output is not None else ""
        form = {".md": "markdown", ".markdown": "markdown", ".ipynb": "ipynb"}.get(suffix, "jsonl")
    if form == "markdown":
        text = markdown(history)
    elif form == "ipynb":
        text = notebook(history)
    else:
        text = "".join(json.dumps(record, default=str) + "\n" for record in records(history))
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text)
        click.echo(f"Wrote the history of {name} to {output}.", err=True)
