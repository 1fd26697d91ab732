"""`sky.plan(...)`: the bootstrap a pool would run, rendered without provisioning anything.

It takes what `sky.Compute` takes, resolves it the same way, folds the plugins' image transforms
and collects their bootstrap ops against a placeholder `Cluster`, and renders the script. Nothing
is started, built or uploaded; wheel paths in the script are the names the wheels would have.

(The module is `planning`, not `plan`, so that `skyward.bootstrap.plan` stays the function.)
"""

from __future__ import annotations

from typing import Any

import attrs

from skyward.bootstrap.ops import Op, as_ops
from skyward.bootstrap.prepare import bootstrap_secrets
from skyward.bootstrap.render import render_script
from skyward.events import mask_secrets
from skyward.image import env_secrets

__all__ = ["PLAN_WORKDIR", "Plan", "plan"]

#: The workdir shown in a plan (a provider chooses the real one).
PLAN_WORKDIR = "/opt/skyward"


@attrs.frozen
class Plan:
    """A dry run: the rendered `script`, the `image` after plugin transforms and the plugin `ops`.

    Secrets (the ops' own, values registered with `skyward.logging.register_secret`, such as
    `huggingface(token=...)`, and credential-named `env` values) read `***` in the script: a plan
    is for reading, printing and pasting into an issue. A pool renders its own script, with the
    values, for its nodes alone.
    """

    script: str
    image: Any
    ops: tuple[Op, ...]

    def __str__(self) -> str:
        return self.script


def plan(*specs: Any, **compute_kwargs: Any) -> Plan:
    """The bootstrap script `sky.Compute(*specs, **compute_kwargs)` would run on its first spec's nodes.

    Example::

        print(sky.plan(image=sky.Image(pip=["six"]), plugins=[sky.plugins.mps()]).script)
    """
    from skyward.bootstrap.wheels import installed_skyward, resolve_source, source_dir
    from skyward.hooks import PoolHooks
    from skyward.providers.base import Cluster
    from skyward.resolve import resolve_compute_args

    compute_kwargs.pop("on_event", None)
    name = compute_kwargs.pop("name", None)
    options = compute_kwargs.pop("options", None)
    resolved, _ = resolve_compute_args(*specs, name=name, options=options, **compute_kwargs)
    spec = resolved[0]
    config = spec.provider_config()
    cluster = Cluster(id="plan", provider=str(getattr(config, "name", "plan")), spec=spec)
    hooks = PoolHooks(tuple(spec.plugins))
    image = hooks.transform_image(spec.image, cluster)
    ops = as_ops(hooks.bootstrap_ops(cluster))
    wheels: tuple[str, ...] = ()
    if resolve_source(image) == "local":
        wheels = tuple(
            f"{PLAN_WORKDIR}/wheels/{_wheel_file(dist, version)}"
            for dist, version in installed_skyward().items()
            if _has_source(dist, source_dir)
        )
    includes_dir = f"{PLAN_WORKDIR}/includes" if image.includes else None
    script = render_script(image, ops, workdir=PLAN_WORKDIR, wheels=wheels, includes_dir=includes_dir)
    secrets = (*bootstrap_secrets(None, ops), *env_secrets(image.env))
    return Plan(script=mask_secrets(script.text, secrets), image=image, ops=ops)


def _wheel_file(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def _has_source(name: str, source_dir: Any) -> bool:
    import importlib.metadata

    try:
        return source_dir(importlib.metadata.distribution(name)) is not None
    except importlib.metadata.PackageNotFoundError:
        return False
