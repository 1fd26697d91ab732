"""`sky`: Skyward's command line (the `sky` console script of skyward-core, or `python -m skyward.cli`).

Built on click. Of the well-kept CLI libraries (click, typer, cyclopts) it is the one whose
command objects are a stable, documented API that other distributions can build against: a
provider or plugin adds subcommands by answering the `skyward_cli_commands` hook with plain
`click.Command` / `click.Group` values, and click's API has barely moved in a decade (typer builds
on click and adds its own layer; cyclopts changed major versions three times in two years). It is
a small pure-Python dependency, and its nested groups give the original Skyward CLI's spellings
(`sky providers list`, `sky config validate`) beside the short forms (`sky providers`,
`sky config`) with no extra machinery. Tables are drawn with rich, already a dependency, on a
terminal, and as plain lines (a header, then one whole record per line) anywhere else: every
command prints them through `skyward.cli.output`.

Exit codes scripts can rely on:

- 0: the command did what was asked (`sky providers` also when some credentials are missing:
  that is information, not failure);
- 1: it could not (an invalid configuration file, no log file, `--check` credentials refused, a
  plugin command that failed): one line on stderr says what and how to fix it, no traceback;
- 2: the command line itself is wrong (an unknown command or option, a bad value), as click does.

Every listing takes `--json` and then prints one JSON document on stdout and nothing else.

The package holds one module per command group (`version`, `providers`, `config`, `logs`,
`sweep` for `ls` and `down`, `offers`); the root group (`skyward.cli.app`) imports a command's
module only when that command runs, so adding one is a module and a line in `app.BUILTIN`.
"""

from __future__ import annotations

from skyward.cli.app import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, cli, main

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "cli", "main"]
