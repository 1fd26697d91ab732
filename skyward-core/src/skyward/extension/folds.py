"""Where the folding hooks start: core's `trylast` implementations of `skyward_image_transform`,
`skyward_launcher` and `skyward_decorate`, each answering the value it was given (the spec's
image, the plain worker command, the task's own function). The plugins' transforms are hook
wrappers around them.

Both ends register these: the client through `skyward.client.core_hooks` (core's entry point, which
imports them from here), the worker through `skyward.worker.lifecycle`. They live apart from
`skyward.client.core_hooks` because that module also names core's providers and plugin factories, and
so stands above the worker (see "Layers" in docs/architecture.md); these need only the hook
catalogue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.extension.hookspecs import TaskFunction, hookimpl

if TYPE_CHECKING:
    from skyward.extension.plugin import LaunchCommand
    from skyward.image import Image


@hookimpl(trylast=True)
def skyward_image_transform(image: Image) -> Image:
    """The image the transforms start from: the spec's own."""
    return image


@hookimpl(trylast=True)
def skyward_launcher(command: LaunchCommand) -> LaunchCommand:
    """The command the launchers start from: the plain `<python> -m skyward.worker`."""
    return command


@hookimpl(trylast=True)
def skyward_decorate(fn: TaskFunction) -> TaskFunction:
    """The function the decorators start from: the task's own."""
    return fn
