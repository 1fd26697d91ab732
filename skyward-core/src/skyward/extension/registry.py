"""Entry-point discovery: public names -> provider config classes and plugin factories.

A fresh plugin manager per lookup context (no module-global state that tests must undo), loaded
once per process lazily and cached; `SKYWARD_DISABLE_PLUGIN_AUTOLOAD=1` keeps third-party entry
points out (core's own still load). A name whose package is missing says which one to install.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

from skyward.errors import MissingPackageError
from skyward.extension import hookspecs

if TYPE_CHECKING:
    from skyward.extension.plugin import Plugin
    from skyward.providers.base import ProviderConfig

ENTRY_POINT_GROUP = "skyward"
CORE_DISTRIBUTION = "skyward-core"

#: Public names whose code is a separate distribution of this repository, so that using one without
#: its package installed says which to install rather than that the name does not exist.
KNOWN_PROVIDER_PACKAGES = {
    "AWS": "skyward-aws", "RunPod": "skyward-runpod", "VastAI": "skyward-vastai", "Verda": "skyward-verda",
    "Novita": "skyward-novita", "Slurm": "skyward-slurm", "LambdaCloud": "skyward-lambda", "Vultr": "skyward-vultr",
    "GCP": "skyward-gcp", "MassedCompute": "skyward-massedcompute", "Hyperstack": "skyward-hyperstack",
    "TensorDock": "skyward-tensordock", "JarvisLabs": "skyward-jarvislabs", "Scaleway": "skyward-scaleway",
}
KNOWN_PLUGIN_PACKAGES = {"torch": "skyward-torch", "accelerate": "skyward-torch", "jax": "skyward-jax"}


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def plugin_manager() -> pluggy.PluginManager:
    """A new manager with every installed distribution's implementations registered.

    A distribution whose entry point fails to import is reported (a warning naming it and its
    distribution) and skipped, so one broken package never takes unrelated pools down.
    """
    pm = pluggy.PluginManager("skyward")
    pm.add_hookspecs(hookspecs)
    only_core = _autoload_disabled()
    for ep in _entry_points():
        dist = ep.dist.name if ep.dist is not None else "?"
        if only_core and dist != CORE_DISTRIBUTION:
            continue
        try:
            module = ep.load()
        except Exception as exc:  # noqa: BLE001 - reported, then skipped
            _report_broken(f"{dist}:{ep.name}", f"failed to import ({type(exc).__name__}: {exc})")
            continue
        name = f"{dist}:{ep.name}"
        if pm.is_registered(module) or pm.has_plugin(name):
            continue
        try:
            pm.register(module, name=name)
        except Exception as exc:  # noqa: BLE001 - a hook whose signature no spec has
            if pm.has_plugin(name):  # pluggy keeps what it registered before the failing hook
                pm.unregister(name=name)
            _report_broken(name, f"does not match Skyward's hooks ({exc})")
    _drop_unknown_hooks(pm)
    return pm


def _drop_unknown_hooks(pm: pluggy.PluginManager) -> None:
    """Unregister each distribution that implements a hook Skyward does not define (a misspelt
    name, or one from a newer Skyward), reporting it, instead of failing every pool."""
    while True:
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            name = pm.get_name(exc.plugin) or repr(exc.plugin)
            pm.unregister(exc.plugin)
            _report_broken(name, f"does not match Skyward's hooks ({exc})")
        else:
            return


#: plugin name -> why it was skipped, for error messages that mention it.
BROKEN: dict[str, str] = {}


def _report_broken(name: str, why: str) -> None:
    if BROKEN.get(name) == why:
        return
    BROKEN[name] = why
    message = f"The Skyward plugin {name} {why}; it is skipped. Reinstall or remove that distribution."
    # A warning, not a log line: discovery can run before the application configured logging,
    # and unconfigured structlog would print on stdout, which belongs to the user.
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def callers(pm: pluggy.PluginManager, hook_name: str) -> list[tuple[str, Callable[..., Any]]]:
    """`(name, caller)` for each plugin on `pm` that implements `hook_name`, in registration order,
    the caller calling that plugin alone (through pluggy, tracing and all): for when one plugin's
    answer must be told from another's, as a failure that must not hide the others'."""
    registered = [(name, plugin) for name, plugin in pm.list_name_plugin() if plugin is not None]
    return [
        (name, pm.subset_hook_caller(hook_name, remove_plugins=[p for _, p in registered if p is not plugin]))
        for name, plugin in registered
        if any(caller.name == hook_name for caller in pm.get_hookcallers(plugin) or ())
    ]


def _collect(pm: pluggy.PluginManager, hook_name: str) -> dict[str, Any]:
    """Each distribution's answer on its own, so one that raises is reported without hiding the rest."""
    found: dict[str, Any] = {}
    for name, call in callers(pm, hook_name):
        try:
            answers = call()
        except Exception as exc:  # noqa: BLE001 - reported, then skipped
            _report_broken(name, f"raised in {hook_name} ({type(exc).__name__}: {exc})")
            continue
        for result in answers:
            if not result:
                continue
            if not isinstance(result, Mapping) or not all(isinstance(key, str) for key in result):
                _report_broken(
                    name,
                    f"returned {type(result).__name__} from {hook_name}, "
                    "where a dict of public names is expected",
                )
                continue
            found.update(result)
    return found


@functools.lru_cache(maxsize=1)
def _loaded() -> pluggy.PluginManager:
    """The installed distributions, loaded once per process."""
    return plugin_manager()


def answers(hook_name: str) -> list[tuple[str, Any]]:
    """`(name, answer)` of each installed distribution implementing the discovery hook
    `hook_name` (`pm.hook.<hook_name>()`, one distribution at a time): for `sky providers`, which
    shows which distribution offers what, and the `sky` subcommands of `skyward_cli_commands`.
    A distribution that raises is reported and skipped; None answers are left out."""
    found: list[tuple[str, Any]] = []
    for name, call in callers(_loaded(), hook_name):
        try:
            results = call()
        except Exception as exc:  # noqa: BLE001 - reported, then skipped
            _report_broken(name, f"raised in {hook_name} ({type(exc).__name__}: {exc})")
            continue
        found.extend((name, result) for result in results if result is not None)
    return found


def hook_modules() -> list[tuple[str, object]]:
    """`(name, module)` of every distribution loaded (core's among them), in registration order:
    each pool's own manager registers these before the pool's plugins."""
    return [(name, module) for name, module in _loaded().list_name_plugin() if module is not None]


@functools.lru_cache(maxsize=1)
def _catalog() -> tuple[dict[str, type[ProviderConfig]], dict[str, Callable[..., Plugin]]]:
    pm = _loaded()
    return _collect(pm, "skyward_providers"), _collect(pm, "skyward_plugins")


def refresh() -> None:
    """Forget what was discovered (after installing a distribution in this process)."""
    _loaded.cache_clear()
    _catalog.cache_clear()


def providers() -> dict[str, type[ProviderConfig]]:
    return dict(_catalog()[0])


def plugins() -> dict[str, Callable[..., Plugin]]:
    return dict(_catalog()[1])


def provider_class(name: str) -> type[ProviderConfig]:
    """Resolve `AWS`, `aws` or `Local` to the provider config class."""
    found = providers()
    for public, cls in found.items():
        if public == name or public.lower() == name.lower():
            return cls
    package = next((pkg for n, pkg in KNOWN_PROVIDER_PACKAGES.items() if n.lower() == name.lower()), None)
    if package is not None:
        public = next(n for n in KNOWN_PROVIDER_PACKAGES if n.lower() == name.lower())
        _raise_missing(f"sky.{public}", package)
    raise MissingPackageError(
        f"No provider named {name!r}; installed providers: {', '.join(sorted(found)) or 'none'}. "
        "Providers come from packages such as skyward-aws (pip install skyward-aws)." + _broken_note()
    )


def provider_config(name: str, **kwargs: Any) -> ProviderConfig:
    """The config object for a provider named in text (`skyward.toml`, `Spec(provider="aws")`)."""
    return provider_class(name)(**kwargs)


def plugin_factory(name: str) -> Callable[..., Plugin]:
    found = plugins()
    if name in found:
        return found[name]
    package = KNOWN_PLUGIN_PACKAGES.get(name)
    if package is not None:
        _raise_missing(f"sky.plugins.{name}", package)
    raise AttributeError(
        f"No plugin named {name!r}; installed plugins: {', '.join(sorted(found)) or 'none'}." + _broken_note()
    )


def _broken_note() -> str:
    if not BROKEN:
        return ""
    return " Skipped because broken: " + "; ".join(f"{n} {why}" for n, why in BROKEN.items())


def _autoload_disabled() -> bool:
    return os.environ.get("SKYWARD_DISABLE_PLUGIN_AUTOLOAD", "") not in ("", "0")


def _raise_missing(public: str, package: str) -> None:
    try:
        version = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        raise MissingPackageError(f"{public} needs the {package} package: pip install {package}") from None
    if _autoload_disabled():
        raise MissingPackageError(
            f"{public} comes from {package} {version}, which is installed but not loaded because "
            "SKYWARD_DISABLE_PLUGIN_AUTOLOAD is set; unset it to use it"
        )
    broken = [f"{n} {why}" for n, why in BROKEN.items() if n.split(":")[0] == package]
    if broken:
        raise MissingPackageError(
            f"{public} comes from {package} {version}, which is installed but could not be loaded: "
            + "; ".join(broken)
        )
    raise MissingPackageError(
        f"{package} {version} is installed but does not provide {public} yet; "
        f"upgrade it (pip install -U {package})"
    )
