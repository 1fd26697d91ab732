"""`sky.plan(...)`: the bootstrap a pool would run, rendered without provisioning anything.

It takes what `sky.Compute` takes, resolves it the same way, folds the plugins' image transforms
and collects their bootstrap ops against a placeholder `Cluster`, and renders the script with the
provider's own settings (`SSH(python=...)`: that interpreter, with its site-packages), then the
line node 0's worker starts with, folded through the plugins' launchers as the pool folds it
(`Plan.launch`, also at the end of the script as a comment). Nothing is started, built or
uploaded; wheel paths in the script are the names the wheels would have, and the workdir is
`PLAN_WORKDIR` (a provider chooses the real one).

It stands with the client, not in `skyward.bootstrap`: it resolves `sky.Compute`'s arguments, calls
the pool's hooks and creates the provider, all of which sit above the bootstrap (see "Layers" in
docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from skyward.bootstrap.ops import Op, as_ops
from skyward.bootstrap.prepare import bootstrap_secrets
from skyward.bootstrap.render import render_script
from skyward.image import env_secrets
from skyward.secrets import mask_secrets

if TYPE_CHECKING:
    from skyward.providers.base import Cluster, Provider

__all__ = ["PLAN_WORKDIR", "Plan", "plan"]

#: The workdir shown in a plan (a provider chooses the real one).
PLAN_WORKDIR = "/opt/skyward"
#: Where the plan shows warm environments (`~/.skyward/envs` on a node).
PLAN_ENVIRONMENTS = "/opt/skyward-envs"


@attrs.frozen
class Plan:
    """A dry run: the rendered `script`, the `image` after plugin transforms and the plugin `ops`,
    and `launch`, the shell line that starts node 0's worker in its node folder once the script ran.

    The script ends with the launch line as a comment, so printing it shows everything a node runs;
    bash ignores the comment, and the rest is the text the node runs. Secrets (the ops' own, values
    registered with `skyward.observe.logging.register_secret`, such as `huggingface(token=...)`, and
    credential-named `env` values) read `***`: a plan is for reading, printing and pasting into an
    issue. A pool renders its own script, with the values, for its nodes alone.
    """

    script: str
    image: Any
    ops: tuple[Op, ...]
    launch: str = ""

    def __str__(self) -> str:
        return self.script


def plan(*specs: Any, **compute_kwargs: Any) -> Plan:
    """The bootstrap script `sky.Compute(*specs, **compute_kwargs)` would run on its first spec's nodes,
    and the line its node 0's worker would start with.

    Example::

        print(sky.plan(image=sky.Image(pip=["six"]), plugins=[sky.plugins.mps()]))
    """
    from skyward.bootstrap.wheels import resolve_source, shipments
    from skyward.client.hooks import PoolHooks
    from skyward.providers.base import Cluster
    from skyward.resolve import resolve_compute_args

    compute_kwargs.pop("on_event", None)
    name = compute_kwargs.pop("name", None)
    options = compute_kwargs.pop("options", None)
    resolved, options = resolve_compute_args(*specs, name=name, options=options, **compute_kwargs)
    spec = resolved[0]
    config = spec.provider  # resolve chose one for a spec that named none
    cluster = Cluster(id=name or "plan", provider=config.name, spec=spec)
    provider = config.create(options)  # no I/O: what `prepare` and `provision` would do is not done
    hooks = PoolHooks(tuple(spec.plugins))
    image = hooks.transform_image(spec.image, cluster)
    ops = as_ops(hooks.bootstrap_ops(cluster))
    from skyward.client.volumes import close_volume_stores

    close_volume_stores(cluster)  # a plan keeps no key it minted for its volumes' ops
    wheels: tuple[str, ...] = ()
    if resolve_source(image) == "local":
        wheels = tuple(f"{PLAN_WORKDIR}/wheels/{s.wheel_name}" for s in shipments() if s.local)
    includes_dir = f"{PLAN_WORKDIR}/includes" if image.includes else None
    args = provider.bootstrap_args()
    environment = None
    if provider.keeps_environments:  # the venv is a warm environment (`bootstrap.environments`)
        from skyward.bootstrap.environments import environment_for
        from skyward.bootstrap.wheels import local_wheels, wheel_cache_dir

        local = local_wheels(wheel_cache_dir()) if resolve_source(image) == "local" else ()
        environment = environment_for(
            image, args.get("python"), bool(args.get("system_site_packages")), local, PLAN_ENVIRONMENTS
        )
    script = render_script(
        image, ops, workdir=PLAN_WORKDIR, wheels=wheels, includes_dir=includes_dir, environment=environment,
        **args,
    )
    secrets = (*bootstrap_secrets(None, ops), *env_secrets(image.env))
    command = _launch_command(provider, cluster, spec, hooks, options)
    if not config.bootstraps:  # plain sky.Local(): no bootstrap, this interpreter
        launch = f"exec {command.render()}"
        then = "sky.Local() runs no bootstrap (Local(isolated=True) does); its workers start with:"
    else:
        launch = script.launch_line(command)
        then = "Then node 0's worker starts in its node folder with:"
    launch = mask_secrets(launch, secrets)
    shown = "".join(f"#   {line}\n" for line in launch.splitlines())  # a comment, whatever it holds
    text = f"{script.text}\n# {then}\n{shown}"
    return Plan(script=mask_secrets(text, secrets), image=image, ops=ops, launch=launch)


def _launch_command(provider: Provider, cluster: Cluster, spec: Any, hooks: Any, options: Any) -> Any:
    """Node 0's worker command, built as the pool builds it (`PoolHooks.worker_launch`).

    The node addresses are the ones the provider gives its instances where it knows them without
    creating anything (`Provider.planned_instances`: sky.SSH's hosts; placeholders otherwise). The
    rendezvous port is the pool's own, picked when it starts: the plan shows the default.
    """
    instances = provider.planned_instances(cluster, [0])
    return hooks.worker_launch(
        provider, cluster, index=0, total=spec.nodes.desired, instance=instances[0], head=instances[0],
        worker=options.worker_config,
    )
