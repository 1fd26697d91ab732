# mypy: disable-error-code="empty-body"
# (a hookspec declares a hook; pluggy calls its implementations, never its body)
"""The hook catalogue: every extension point of Skyward, in one file (pluggy project name "skyward").

Three families, each called through `pm.hook.<name>(...)` on its own plugin manager:

- **discovery** (`skyward_providers`, `skyward_plugins`, `skyward_cli_commands`,
  `skyward_sweepers`, `skyward_offer_sources`): implemented by
  the module an installed distribution names in the `skyward` entry-point group; core's own
  built-ins (`skyward.client.core_hooks`) come through the same entry point, so there is one path for
  everyone (`skyward.extension.registry`);
- **pool** (`skyward_workers_per_node` ... `skyward_worker_plugins`): called on the client by the
  pool's own manager (`skyward.client.hooks.PoolHooks`), which holds the installed distributions' modules
  and then each `Plugin` of `plugins=[...]`;
- **worker** (`skyward_decorate`, `skyward_around_app`, `skyward_around_process`): called on each
  worker by a manager holding the `Plugin` values the pool shipped (`skyward.worker.lifecycle`).

A `Plugin` value implements these hooks through its fields (`skyward.client.hooks.PluginAdapter` and
`PluginFolds` on the client, `skyward.worker.lifecycle.WorkerAdapter` on the worker), so most
authors never write a hook function; a distribution may implement any pool hook in its
entry-point module, with pluggy's `tryfirst`, `trylast` and `wrapper` to place it among the
pool's plugins. Ordering, per kind of hook:

- **collecting** hooks (bootstrap ops, `around_client`, workers per node, worker plugins, the
  worker's `around_app` / `around_process`): every implementation answers, and the answers come in
  call order: `tryfirst` implementations, then the pool's plugins in list order, then the installed
  distributions' (the last registered first), then `trylast` ones. A wrapper sees the whole list.
- **folding** hooks (`skyward_image_transform`, `skyward_launcher`, `skyward_decorate`) are
  `firstresult`: the first plain implementation to answer gives the starting value (core's
  `trylast` one answers the value it was given), and every transformation is a hook wrapper
  (`@hookimpl(wrapper=True)`) that receives the value produced inside it (`value = yield`) and
  returns its own. The pool's plugins are wrappers, nested so that they fold in list order (the
  decorators in reverse, so that the first plugin's is the outermost); a distribution's wrapper
  applies before them, or after them all (seeing the folded result) when marked `tryfirst`.

The types below are imported for type checkers only: this module is imported by every
distribution's hooks module and by the worker, so it imports nothing of Skyward at runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from skyward.bootstrap.ops import Op
    from skyward.client.pool import Pool
    from skyward.extension.plugin import LaunchCommand, LaunchContext, Plugin
    from skyward.image import Image
    from skyward.market.source import OfferSource
    from skyward.providers.base import Cluster, Instance, Provider, ProviderConfig
    from skyward.providers.sweep import Sweeper
    from skyward.spec import Spec
    from skyward.task.instance import InstanceInfo

hookspec = pluggy.HookspecMarker("skyward")
hookimpl = pluggy.HookimplMarker("skyward")

#: What a task function is, before and after the plugins' decorators.
TaskFunction = Callable[..., object]


# -- discovery (entry points, once per process) ---------------------------------------------------------


@hookspec
def skyward_providers() -> Mapping[str, type[ProviderConfig]]:
    """Return `{"Public": ConfigClass}` for the providers this distribution offers.

    Runs once per process, when a pool starts or a lazy public name (`sky.AWS`) is first touched.
    Each distribution is called on its own and the answers are merged (a later distribution's name
    replaces an earlier one's); one that raises or answers something other than a dict is reported
    and skipped. The config class is what users instantiate (`sky.AWS(region=...)`); its lowercase
    public name is also the name used in `skyward.toml` (`provider = "aws"`).
    """


@hookspec
def skyward_plugins() -> Mapping[str, Callable[..., Plugin]]:
    """Return `{"name": factory}` for the plugins this distribution offers (`sky.plugins.<name>`).

    Runs and combines like `skyward_providers`. Import the factory's module lazily (inside this
    function), so that discovering it imports no framework.
    """


@hookspec
def skyward_cli_commands() -> Sequence[click.Command] | click.Command | None:
    """Return the `click` commands or groups this distribution adds to the `sky` command line.

    Collecting; runs once per `sky` invocation, when a command that is not built in is looked up
    or the commands are listed (`sky --help`). Each distribution is called on its own: one that
    raises or answers something other than click commands is reported and skipped. A command is
    reached by its own name (`sky <name> ...`); a built-in command of the same name wins. Import
    `click` and build the commands inside this function, so other entry points stay cheap.
    """


@hookspec
def skyward_sweepers() -> Sequence[Sweeper] | None:
    """Return the `Sweeper`s (`skyward.providers.sweep`) that find and end this distribution's
    machines without a pool, for `sky ls` and `sky down`.

    Collecting; runs once per `sky ls` / `sky down`. Each sweeper lists only machines carrying
    Skyward's mark (a tag, a name) and never ends anything else; one whose `credentials()` are not
    found is skipped and reported. Build the sweepers inside this function: it loads nothing else.
    """


@hookspec
def skyward_offer_sources() -> Sequence[OfferSource] | OfferSource | None:
    """Return the `OfferSource`s (`skyward.market.source`) that list this distribution's instance
    offers and prices, for `sky offers` and `sky.offers()`.

    Collecting; runs once per `sky offers` / `sky.offers()`. A source reads the provider's usual
    environment for its credentials; one whose `credentials()` are not found is not asked, one
    whose `fetch()` raises is reported beside the others' offers (its last offers kept, marked
    stale). A provider config may also answer `offer_source()` with a source bound to its own
    settings, which a pool with `selection="cheapest"` prices its specs from. Build the sources
    inside this function: it loads nothing else.
    """


# -- pool (client side, once per pool) ---------------------------------------------------------------


@hookspec
def skyward_workers_per_node(spec: Spec) -> int | None:
    """Return how many worker processes each node runs (e.g. one per MIG instance), or None for one.

    Collecting; runs once at pool start, before provisioning. Each worker gets its own
    `InstanceInfo.worker` and `@` reaches every worker. Answers of 1 agree with anything; two
    different answers above 1 are an error that names both plugins.
    """


@hookspec(firstresult=True)
def skyward_image_transform(image: Image, cluster: Cluster) -> Image:
    """Return the image every node is bootstrapped from.

    Folding; runs once per pool, after `provider.prepare` and before the bootstrap script is
    rendered (and in `sky.plan`). Core's trylast implementation answers the spec's `image`; each
    plugin's `transform` is a wrapper that receives the previous plugin's image and returns a new
    one (`Image` is frozen: `image.with_pip(...)`), or None to keep it. A value that is not an
    `Image` is a `PluginError` naming the plugin.
    """


@hookspec
def skyward_bootstrap_ops(cluster: Cluster) -> Sequence[Op | str] | Op | str | None:
    """Return shell ops (strings or `skyward.bootstrap.Op`) each node runs after the image phases.

    Collecting; runs once per pool when the bootstrap script is rendered. The ops are appended in
    call order (the pool's plugins in list order), each implementation's in the order it returned
    them; a plain string becomes an `Op` named after its plugin.
    """


@hookspec(firstresult=True)
def skyward_launcher(command: LaunchCommand, context: LaunchContext) -> LaunchCommand:
    """Return the command that starts node `context.node_id`'s worker (accelerate, torchrun).

    Folding; runs once per node, before its worker starts (and for node 0 in `sky.plan`). Core's
    trylast implementation answers `command`, the plain `<python> -m skyward.worker`; each
    plugin's `launcher` is a wrapper that wraps the previous plugin's command and returns a new
    `LaunchCommand`, or None to keep it.
    """


@hookspec
def skyward_around_client(pool: Pool, cluster: Cluster) -> AbstractContextManager[object] | None:
    """Return a context manager to hold on the client while the pool is up, or None.

    Collecting; runs once the pool is ready. The managers are entered in call order (the pool's
    plugins in list order) and exited in reverse before the pool tears down; one that fails on
    entering or leaving is a `PluginError` naming its plugin.
    """


@hookspec
def skyward_worker_plugins() -> Sequence[Plugin] | None:
    """Return the `Plugin` values whose worker hooks (`decorate`, `around_app`, `around_process`)
    ship to every worker in the handshake.

    Collecting; runs once at pool start. Each `Plugin` of the pool answers itself when it has a
    worker hook; a distribution may answer plugins of its own to run them on every pool's workers.
    The workers register them in the order collected, which is the order their hooks follow.
    """


@hookspec(firstresult=True)
def skyward_end_machine_command(provider: Provider, cluster: Cluster, instance: Instance) -> str | None:
    """Return the shell command that ends `instance`'s machine from inside it, "" for none, or
    None to leave the answer to others.

    The node's guardian (`skyward.guardian`) runs it as the machine's login user when the pool's
    lease lapses (its client gone for `Spec.ttl` seconds), after stopping the pool's processes and
    deleting its secrets. First answer wins; with none, the provider's own
    (`Provider.end_machine_command`, by default its `shutdown_command`) is used. A third-party
    cloud answers the command that powers off or deletes its machine (the instance's id is in
    `instance.id`); "" keeps the machine up.
    """


# -- worker (on each worker, from the plugins the pool shipped) --------------------------------------


@hookspec(firstresult=True)
def skyward_decorate(fn: TaskFunction) -> TaskFunction:
    """Return the function a task calls instead of `fn`.

    Folding; runs once per function per worker process (and per executor subprocess), never per
    task: the wrapper it returns is cached and runs for every task. Core's trylast implementation
    answers `fn`; each plugin's `decorate` is a wrapper, nested so that the first plugin's
    decorator is the outermost (`plugins=[a, b]` runs `a.decorate(b.decorate(fn))`).
    """


@hookspec
def skyward_around_app(info: InstanceInfo) -> AbstractContextManager[object] | None:
    """Return a context manager held for the life of the worker process, or None.

    Collecting; runs once per worker process, lazily before its first task. The managers are
    entered in plugin order and exited in reverse when the worker shuts down; one that fails to
    enter leaves those entered before it, and the next task tries the whole chain again.
    """


@hookspec
def skyward_around_process(info: InstanceInfo) -> AbstractContextManager[object] | None:
    """Return a context manager held for the life of an executor subprocess, or None.

    Collecting; runs once per executor subprocess (`Worker(executor="process")`), before its first
    task and after the environment variables are set; entered in plugin order, exited in reverse
    when the subprocess ends.
    """
