"""`sky version`: every installed Skyward distribution and the Python running them.

A distribution counts as Skyward's when its name starts with `skyward` or when it registers in the
`skyward` entry-point group (a third-party provider such as `acme-cloud`), so a bug report shows
everything that can change Skyward's behaviour.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from typing import Any

import click

from skyward.cli.output import draw, emit_json, json_option, table
from skyward.extension.registry import CORE_DISTRIBUTION, ENTRY_POINT_GROUP


def distributions() -> list[dict[str, str]]:
    """`{name, version}` of each Skyward distribution, skyward-core first, then by name."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] or ""
        ours = name.lower().replace("_", "-").startswith("skyward") or any(
            ep.group == ENTRY_POINT_GROUP for ep in dist.entry_points
        )
        if ours and name not in found:  # the first on sys.path is the one imported
            found[name] = dist.version
    order = sorted(found, key=lambda name: (name != CORE_DISTRIBUTION, name))
    return [{"name": name, "version": found[name]} for name in order]


def report() -> dict[str, Any]:
    return {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "distributions": distributions(),
    }


@click.command()
@json_option
def version(as_json: bool) -> None:
    """Versions of every installed Skyward distribution and of Python."""
    data = report()
    if as_json:
        emit_json(data)
        return
    python = data["python"]
    rows = [(d["name"], d["version"]) for d in data["distributions"]]
    rows.append((f"Python ({python['implementation']})", python["version"]))
    draw(table(None, ("distribution", "version"), rows))
