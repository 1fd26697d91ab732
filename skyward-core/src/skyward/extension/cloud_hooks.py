"""The entry-point hooks a cloud package implements, written once: its config class for
`sky.<Name>` and `provider="<name>"` (`skyward_providers`), its sweeper for `sky ls`/`sky down`
(`skyward_sweepers`) and its offer source for `sky offers` (`skyward_offer_sources`).

Each is named as `"module:attribute"` and imported only when Skyward calls the hook, so that
discovering the installed clouds imports none of their machinery. A package's `hooks.py` (its
`skyward` entry point) is then three names:

    skyward_providers, skyward_sweepers, skyward_offer_sources = cloud_hooks(
        providers={"JarvisLabs": "skyward_jarvislabs.config:JarvisLabs"},
        sweeper="skyward_jarvislabs.sweep:JarvisLabsSweeper",
        offers="skyward_jarvislabs.offers:JarvisOffers",
    )

pluggy finds an implementation by the module attribute that holds it, so the names must be the
hooks' own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from skyward.extension.hookspecs import hookimpl


def load(path: str) -> Any:
    """The object `path` ("package.module:Name") names, its module imported now."""
    module, _, attribute = path.partition(":")
    if not attribute:
        raise ValueError(f"{path!r}: expected 'module:attribute'")
    return getattr(importlib.import_module(module), attribute)


def _named(name: str, function: Callable[[], Any]) -> Callable[[], Any]:
    function.__name__ = function.__qualname__ = name
    return hookimpl(function)


def cloud_hooks(
    *, providers: Mapping[str, str], sweeper: str, offers: str
) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]:
    """`skyward_providers`, `skyward_sweepers` and `skyward_offer_sources` for one cloud: its
    public names -> config classes, its sweeper class and its offer source class (each built
    with no arguments when asked), all imported lazily (see the module)."""
    public = dict(providers)
    return (
        _named("skyward_providers", lambda: {name: load(path) for name, path in public.items()}),
        _named("skyward_sweepers", lambda: [load(sweeper)()]),
        _named("skyward_offer_sources", lambda: [load(offers)()]),
    )
