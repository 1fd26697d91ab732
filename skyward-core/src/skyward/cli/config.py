"""`sky config` (also `path`, `show`, `validate`): the configuration a pool would be built from.

The project's `skyward.toml` (found as `sky.Compute(name=...)` finds it) over the user's
`~/.skyward/defaults.toml`, read by `skyward.config` and built the same way a pool builds it:
every named provider and every pool is turned into its records, so what `validate` accepts is what
`Compute(name=...)` accepts. Each problem is one line naming the file, the key and the fix, and
any problem is exit code 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from skyward.cli.output import Table, draw, emit_json, json_option, table
from skyward.config import (
    CONFIG_ENV,
    CONFIG_FILENAME,
    SkywardConfig,
    find_config,
    load_config,
    user_defaults_path,
)

file_option = click.option(
    "--file", "path", type=click.Path(dir_okay=False, path_type=Path),
    help=f"The project file to read (default: ${CONFIG_ENV}, else the nearest {CONFIG_FILENAME} upwards).",
)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """`{"options": {"console": "log"}}` -> `[("options.console", "log")]`, for one row per key."""
    rows: list[tuple[str, Any]] = []
    for key, value in table.items():
        if isinstance(value, Mapping) and value:
            rows.extend(_flatten(value, f"{prefix}{key}."))
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def _files(config: SkywardConfig) -> dict[str, Any]:
    user = user_defaults_path()
    return {
        "project": str(config.path) if config.path else None,
        "user_defaults": str(user),
        "user_defaults_exists": user.is_file(),
    }


def resolved(config: SkywardConfig) -> dict[str, Any]:
    """What `sky config show --json` prints: the files, each provider and pool as built, problems."""
    problems = config.problems()
    return {
        "files": _files(config),
        "providers": {
            name: {"file": str(config.provider_files[name]), **table}
            for name, table in config.providers.items()
        },
        "pools": {name: config.table(name) for name in config.pools},
        "problems": problems,
        "valid": not problems,
    }


def _fail_on(problems: list[str]) -> None:
    if problems:
        for problem in problems[:-1]:
            click.echo(f"Error: {problem}", err=True)
        raise click.ClickException(problems[-1])


def show(path: Path | None, as_json: bool) -> None:
    config = load_config(path)
    data = resolved(config)
    if as_json:
        emit_json(data)
    else:
        files = data["files"]
        user = files["user_defaults"] + ("" if files["user_defaults_exists"] else " (none)")
        drawn: list[Table | Text] = [table("Files", ("file", "path"), [
            (CONFIG_FILENAME, files["project"] or f"none found (set {CONFIG_ENV} or create one)"),
            ("defaults.toml", user),
        ])]
        if config.providers:
            drawn.append(table("Providers", ("provider", "key", "value"), [
                (name, key, repr(value) if isinstance(value, str) else value)
                for name, fields in config.providers.items() for key, value in _flatten(fields)
            ]))
        if config.pools:
            drawn.append(table("Pools (with [defaults] applied)", ("pool", "key", "value"), [
                (name, key, repr(value) if isinstance(value, str) else value)
                for name in config.pools for key, value in _flatten(config.table(name))
            ]))
        if not data["problems"]:
            drawn.append(Text("valid", style="green"))
        draw(*drawn)
    _fail_on(data["problems"])


@click.group(invoke_without_command=True)
@file_option
@json_option
@click.pass_context
def config(ctx: click.Context, path: Path | None, as_json: bool) -> None:
    """The resolved configuration (skyward.toml over ~/.skyward/defaults.toml), validated."""
    if ctx.invoked_subcommand is None:
        show(path, as_json)


@config.command("show")
@file_option
@json_option
def show_config(path: Path | None, as_json: bool) -> None:
    """The same as `sky config`: every provider and pool as built, then any problem."""
    show(path, as_json)


@config.command("path")
@json_option
def config_path(as_json: bool) -> None:
    """Where the project file and the user's defaults are read from."""
    found = find_config()
    user = user_defaults_path()
    if as_json:
        emit_json({"project": str(found) if found else None, "user_defaults": str(user),
                   "user_defaults_exists": user.is_file()})
        return
    click.echo(f"{CONFIG_FILENAME}: {found if found else f'none found (set {CONFIG_ENV} or create one)'}")
    click.echo(f"defaults.toml: {user}" + ("" if user.is_file() else " (none)"))


@config.command("validate")
@file_option
@json_option
def validate(path: Path | None, as_json: bool) -> None:
    """Build every provider and pool; print each problem (file, key, fix) and exit 1 if any."""
    config_ = load_config(path)
    problems = config_.problems()
    if as_json:
        emit_json({"files": _files(config_), "problems": problems, "valid": not problems})
    elif not problems:
        where = config_.path or f"no {CONFIG_FILENAME}"
        click.echo(f"valid: {where} (pools: {len(config_.pools)}, providers: {len(config_.providers)})")
    _fail_on(problems)
