"""`sky providers` (also `sky providers list`, and `check` for `--check`): what can run a pool here.

Each installed provider (Local and SSH included) with the distribution that offers it and whether
credentials for it are found: the config class's optional `credentials(check=False)` answers a
`CredentialStatus` from the environment and the provider's usual files, without a network call.
With `--check` it makes one cheap authenticated call where the provider has one (AWS: STS
`GetCallerIdentity`), and a refusal is exit code 1. Known providers and plugins whose package is
missing are listed with the command that installs them, so a user sees what exists before
searching for it. Missing credentials are information, not failure: you may not use that cloud.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import click
from rich.text import Text

from skyward.cli.output import draw, emit_json, json_option, table
from skyward.errors import MissingPackageError
from skyward.extension import registry

if TYPE_CHECKING:
    from skyward.providers.base import ProviderConfig

check_option = click.option(
    "--check", is_flag=True, help="Also make one cheap authenticated call per provider to verify credentials."
)


def _distribution(plugin_name: str) -> str:
    """`skyward-aws:aws` (the registry's plugin name) -> `skyward-aws`."""
    return plugin_name.split(":")[0]


def _credentials(cls: type[ProviderConfig], check: bool) -> dict[str, Any] | None:
    try:
        status = cls.credentials(check=check)
    except Exception as error:  # noqa: BLE001 - one provider's failure is shown beside the others
        return {"found": False, "where": f"{type(error).__name__}: {error}", "verified": None, "detail": ""}
    return None if status is None else attrs.asdict(status)


def _missing_hint(check: Any) -> str:
    try:
        check()
    except MissingPackageError as error:
        return str(error)
    return ""


def gather(check: bool = False) -> dict[str, Any]:
    """The listing `sky providers --json` prints."""
    installed: dict[str, dict[str, Any]] = {}
    for plugin_name, answer in registry.answers("skyward_providers"):
        if not isinstance(answer, Mapping):
            continue  # the registry reports such a distribution when a pool asks for it
        for public, cls in answer.items():
            installed[public.lower()] = {
                "name": public, "type": public.lower(), "distribution": _distribution(plugin_name),
                "installed": True, "credentials": _credentials(cls, check),
            }
    missing = [
        {
            "name": public, "type": public.lower(), "distribution": package, "installed": False,
            "install": f"pip install {package}",
            "hint": _missing_hint(lambda public=public: registry.provider_class(public)),
        }
        for public, package in registry.KNOWN_PROVIDER_PACKAGES.items()
        if public.lower() not in installed
    ]
    plugins: dict[str, dict[str, Any]] = {}
    for plugin_name, answer in registry.answers("skyward_plugins"):
        if isinstance(answer, Mapping):
            for name in answer:
                plugins[name] = {"name": name, "distribution": _distribution(plugin_name), "installed": True}
    missing_plugins = [
        {
            "name": name, "distribution": package, "installed": False, "install": f"pip install {package}",
            "hint": _missing_hint(lambda name=name: registry.plugin_factory(name)),
        }
        for name, package in registry.KNOWN_PLUGIN_PACKAGES.items()
        if name not in plugins
    ]
    order = sorted(installed.values(), key=lambda row: (row["distribution"] != registry.CORE_DISTRIBUTION,
                                                        row["name"].lower()))
    return {
        "providers": [*order, *missing],
        "plugins": [*sorted(plugins.values(), key=lambda row: row["name"]), *missing_plugins],
    }


def _state(row: dict[str, Any]) -> Text:
    if not row["installed"]:
        return Text("not installed", style="dim")
    credentials = row["credentials"]
    if credentials is None:
        return Text("unknown", style="dim")
    if credentials["verified"] is True:
        return Text("verified", style="green")
    if credentials["verified"] is False:
        return Text("refused", style="red")
    return Text("found", style="green") if credentials["found"] else Text("missing", style="yellow")


def _where(row: dict[str, Any]) -> str:
    if not row["installed"]:
        return _install(row)
    credentials = row["credentials"] or {}
    return " ".join(filter(None, [credentials.get("where", ""), credentials.get("detail", "")]))


def _install(row: dict[str, Any]) -> str:
    """The pip command, or the registry's longer word when it is installed but not loaded."""
    return row["install"] if not row["hint"] or row["hint"].endswith(row["install"]) else row["hint"]


def show(as_json: bool, check: bool) -> None:
    data = gather(check)
    refused = [
        row["name"] for row in data["providers"] if (row.get("credentials") or {}).get("verified") is False
    ]
    if as_json:
        emit_json(data)
    else:
        draw(
            table(
                "Providers", ("provider", "type", "from", "credentials", "where / how to install"),
                [(r["name"], r["type"], r["distribution"], _state(r), _where(r)) for r in data["providers"]],
            ),
            table(
                "Plugins", ("plugin", "from", "state"),
                [
                    (r["name"], r["distribution"], "installed" if r["installed"] else _install(r))
                    for r in data["plugins"]
                ],
            ),
        )
    if refused:
        raise click.ClickException(f"credentials refused by: {', '.join(refused)}; see the where column")


@click.group(invoke_without_command=True)
@json_option
@check_option
@click.pass_context
def providers(ctx: click.Context, as_json: bool, check: bool) -> None:
    """Installed providers and plugins, and whether credentials are found for each."""
    if ctx.invoked_subcommand is None:
        show(as_json, check)


@providers.command("list")
@json_option
@check_option
def list_providers(as_json: bool, check: bool) -> None:
    """The same as `sky providers`."""
    show(as_json, check)


@providers.command("check")
@json_option
def check_providers(as_json: bool) -> None:
    """The same as `sky providers --check`: verify credentials with one cheap call each."""
    show(as_json, True)
