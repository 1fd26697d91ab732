"""Distributions add `sky` subcommands through the `skyward_cli_commands` hook."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cli_support import Sky, no_traceback

sys.path.insert(0, str(Path(__file__).parent.parent / "plugins"))

from plugin_support import distribution  # noqa: E402

HELLO = '''
@hookimpl
def skyward_cli_commands():
    import click

    @click.group()
    def acme():
        """Acme Cloud's own commands."""

    @acme.command()
    @click.argument("name")
    def hello(name):
        """Greet someone."""
        click.echo(f"hello {name} from acme")

    @acme.command()
    def broken():
        raise click.ClickException("acme is down")

    return [acme]
'''


@pytest.fixture
def site(tmp_path: Path, sky: Sky) -> Path:
    """A folder of test distributions that `sky` sees (on its PYTHONPATH)."""
    folder = tmp_path / "site"
    folder.mkdir()
    sky.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    return folder


def test_a_third_party_group_runs_as_a_sky_subcommand(sky: Sky, site: Path) -> None:
    distribution(site, "acme-cloud", HELLO)
    done = sky("acme", "hello", "world")
    assert (done.returncode, done.stdout) == (0, "hello world from acme\n")


def test_a_third_party_command_is_listed_in_help(sky: Sky, site: Path) -> None:
    distribution(site, "acme-cloud", HELLO)
    assert "Acme Cloud's own commands." in sky("--help").stdout


def test_the_adding_distribution_is_listed_by_version(sky: Sky, site: Path) -> None:
    distribution(site, "acme-cloud", HELLO)
    assert {"name": "acme-cloud", "version": "0.1"} in sky.json("version")["distributions"]


def test_a_plugin_commands_failure_keeps_the_exit_code_contract(sky: Sky, site: Path) -> None:
    distribution(site, "acme-cloud", HELLO)
    done = sky("acme", "broken")
    assert (done.returncode, done.stderr) == (1, "Error: acme is down\n")


def test_without_the_distribution_the_command_is_a_usage_error(sky: Sky) -> None:
    done = sky("acme", "hello", "world")
    assert done.returncode == 2 and "No such command 'acme'" in done.stderr


def test_a_distribution_answering_something_else_is_skipped_with_a_warning(sky: Sky, site: Path) -> None:
    distribution(site, "acme-cloud", HELLO)
    distribution(site, "skyward-odd", "@hookimpl\ndef skyward_cli_commands():\n    return 'not a command'\n")
    done = sky("acme", "hello", "you")
    assert done.returncode == 0 and done.stdout == "hello you from acme\n" and no_traceback(done)
    assert "skyward-odd" in done.stderr and "click commands are expected" in done.stderr


def test_a_built_in_name_cannot_be_taken_over(sky: Sky, site: Path) -> None:
    takeover = (
        '@hookimpl\ndef skyward_cli_commands():\n    import click\n    return click.Command("version")\n'
    )
    distribution(site, "skyward-takeover", takeover)
    assert '"skyward-core"' in sky("version", "--json").stdout  # built-ins never ask the plugins
    listed = sky("--help")
    assert listed.returncode == 0 and listed.stdout.count("  version ") == 1
    assert "skyward-takeover" in listed.stderr and "built-in one is kept" in listed.stderr
