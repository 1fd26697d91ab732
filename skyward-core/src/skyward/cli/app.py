"""The root `sky` group: built-in commands loaded on use, plugin commands from the hook, and the
translation of Skyward's expected errors into one line on stderr and exit code 1.

Built-in commands are named here as `module:attribute` and imported only when run or listed, so
`sky version` does not pay for discovering providers. Commands from other distributions come from
the `skyward_cli_commands` hook, gathered only when a name is not built in or the commands are
listed; a built-in name always wins over a plugin's.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from typing import Any

import click

from skyward.errors import SkywardError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

#: command name -> "module:attribute" of its click command.
BUILTIN = {
    "version": "skyward.cli.version:version",
    "providers": "skyward.cli.providers:providers",
    "config": "skyward.cli.config:config",
    "logs": "skyward.cli.logs:logs",
    "ls": "skyward.cli.sweep:ls",
    "down": "skyward.cli.sweep:down",
    "offers": "skyward.cli.offers:offers",
    "server": "skyward.cli.server:server",
    "compute": "skyward.cli.compute:compute",
    "log": "skyward.cli.log:log",
}


class SkyGroup(click.Group):
    """`sky`: built-in commands by name, then the commands other distributions add."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        extra = sorted(name for name in plugin_commands() if name not in BUILTIN)
        return [*sorted(BUILTIN), *extra]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in BUILTIN:
            module, attribute = BUILTIN[cmd_name].split(":")
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return plugin_commands().get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SkywardError as error:  # expected: a wrong file, a missing package, ...
            raise click.ClickException(str(error)) from None


@functools.cache
def plugin_commands() -> dict[str, click.Command]:
    """The commands installed distributions add through `skyward_cli_commands`, by name."""
    from skyward.extension import registry

    found: dict[str, click.Command] = {}
    for distribution, answer in registry.answers("skyward_cli_commands"):
        commands = [answer] if isinstance(answer, click.Command) else answer
        if not isinstance(commands, list | tuple) or not all(
            isinstance(c, click.Command) and c.name for c in commands
        ):
            warnings.warn(
                f"The Skyward plugin {distribution} returned {type(answer).__name__} from "
                "skyward_cli_commands, where click commands are expected; it is skipped.",
                RuntimeWarning, stacklevel=2,
            )
            continue
        for command in commands:
            if command.name in BUILTIN:
                warnings.warn(
                    f"The Skyward plugin {distribution} adds a `sky {command.name}` command, which "
                    "is built in; the built-in one is kept.",
                    RuntimeWarning, stacklevel=2,
                )
                continue
            found[str(command.name)] = command
    return found


@click.group(cls=SkyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="skyward-core", prog_name="sky", message="%(prog)s %(version)s")
def cli() -> None:
    """Skyward's command line: installed providers, offers and prices, configuration, logs, machines.

    Exit codes: 0 done, 1 failed (one line on stderr says why), 2 wrong command line.
    Every listing takes --json.
    """


def _show_warning(message: Any, category: type[Warning], *_args: Any, **_kwargs: Any) -> None:
    """Warnings (a broken plugin skipped) as one line on stderr, without a source line."""
    print(f"warning: {message}", file=sys.stderr)


def main(args: list[str] | None = None, prog_name: str = "sky") -> None:
    """The console script: run `sky` and exit with its code."""
    warnings.showwarning = _show_warning
    cli.main(args=args, prog_name=prog_name)
