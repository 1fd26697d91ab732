"""`sky.plugins.accelerate()`: start each node's worker under Hugging Face ``accelerate launch``.

The plugin has two hooks:

- ``transform`` adds ``accelerate`` to the image's pip packages;
- ``launcher`` rewrites the worker's start command (a ``LaunchCommand``) so that, on every node,
  ``accelerate launch`` starts the worker with the cluster's topology on its command line:

  ========================  ===========================================================
  accelerate flag           value
  ========================  ===========================================================
  ``--num_machines``        ``context.num_nodes``
  ``--machine_rank``        ``context.node_id``
  ``--main_process_ip``     ``context.head_addr``
  ``--main_process_port``   ``context.rendezvous_port`` (the pool's rendezvous port on the head)
  ``--num_processes``       ``config["num_processes"]`` (total across nodes), default
                            ``num_nodes``: one process per node
  paradigm                  ``distributed_type`` -> ``--multi_gpu``, ``--use_fsdp``,
                            ``--use_deepspeed``, ``--use_megatron_lm``, ``--cpu``
                            (``MULTI_CPU``) or nothing (``NO``); inferred as ``FSDP`` when
                            the config has ``fsdp``, ``DEEPSPEED`` when it has
                            ``deepspeed``, else ``MULTI_GPU``; an explicit value wins
  ========================  ===========================================================

  followed by the pass-through settings (``--mixed_precision``, ``--num_cpu_threads_per_process``,
  ``--gpu_ids``, ``--same_network``, ``--downcast_bf16``, ``--rdzv_backend``, ``--debug``) and the
  paradigm's own flags: each ``fsdp`` entry becomes ``--fsdp_<key> <value>`` (the ``fsdp_`` prefix
  is added when the key lacks it, as ``accelerate`` does for its YAML) and each ``deepspeed``
  entry ``--<key> <value>`` (``config_file`` is ``--deepspeed_config_file``). Booleans are written
  ``true``/``false`` and lists comma-joined, the way those flags take them.

Everything is a command-line flag; no config file is written (flags take precedence over an
``accelerate config`` default file should the image carry one).

The launcher is the worker interpreter itself, ``<python> -m accelerate.commands.accelerate_cli
launch``: that module is what the ``accelerate`` console script runs, and naming the interpreter
keeps the launch independent of ``PATH`` and guarantees the worker runs under the same Python the
plain command would have used. The worker entrypoint ``<python> -m skyward.worker`` becomes
``-m skyward.worker`` (accelerate adds the interpreter back); its arguments follow unchanged.

Skyward speaks to one worker process per node over that node's channel, so ``num_processes``
must equal the node count: several processes per node would share one channel. DeepSpeed on
several machines defaults to accelerate's ``standard`` multinode launcher (``torchrun`` on each
node, which is how Skyward starts nodes) rather than ``pdsh``, which would ssh to the others.
"""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Mapping
from typing import Any

from skyward.errors import ConfigurationError
from skyward.extension.plugin import AccelerateConfig, LaunchCommand, LaunchContext, Plugin
from skyward.image import Image

__all__ = ["ACCELERATE_CLI", "accelerate", "accelerate_flags", "distributed_type"]

#: The module behind the ``accelerate`` console script, run with the worker's interpreter.
ACCELERATE_CLI = "-m accelerate.commands.accelerate_cli launch"

#: ``distributed_type`` -> the ``accelerate launch`` flag that selects it.
PARADIGM_FLAGS: dict[str, str | None] = {
    "MULTI_GPU": "--multi_gpu",
    "FSDP": "--use_fsdp",
    "DEEPSPEED": "--use_deepspeed",
    "MEGATRON_LM": "--use_megatron_lm",
    "MULTI_CPU": "--cpu",
    "NO": None,
}

#: Settings passed through as ``--<name> <value>``, in this order.
_VALUE_SETTINGS = ("mixed_precision", "num_cpu_threads_per_process", "gpu_ids")
#: Settings that are ``store_true`` switches in ``accelerate launch``.
_SWITCH_SETTINGS = ("same_network", "downcast_bf16")
#: Aliases with the YAML's own spelling (``accelerate config`` writes ``fsdp_config``).
_SECTION_ALIASES = {"fsdp_config": "fsdp", "deepspeed_config": "deepspeed"}
#: Topology that the plugin injects from the cluster; setting it by hand would contradict the pool.
_INJECTED = ("num_machines", "machine_rank", "main_process_ip", "main_process_port", "compute_environment")
_KNOWN = frozenset(AccelerateConfig.__annotations__)


def _normalise(config: Mapping[str, Any] | None) -> dict[str, Any]:
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigurationError(
            f"accelerate(config={config!r}): expected a dict shaped like `accelerate config` YAML, "
            'e.g. {"mixed_precision": "bf16", "fsdp": {"sharding_strategy": "FULL_SHARD"}}'
        )
    settings: dict[str, Any] = {}
    for key, value in config.items():
        name = _SECTION_ALIASES.get(key, key)
        if name in _INJECTED:
            raise ConfigurationError(
                f"accelerate(config={{{key!r}: ...}}): Skyward sets {key} from the pool's topology; remove it"
            )
        if name not in _KNOWN:
            raise ConfigurationError(
                f"accelerate(config={{{key!r}: ...}}): unknown setting; "
                f"expected one of {', '.join(sorted(_KNOWN))}"
            )
        if name in settings:
            raise ConfigurationError(
                f"accelerate(config=...): {name} is given twice (as {name} and as {key})"
            )
        settings[name] = value
    for section in ("fsdp", "deepspeed"):
        if section in settings and not isinstance(settings[section], Mapping):
            raise ConfigurationError(
                f"accelerate(config={{{section!r}: {settings[section]!r}}}): "
                f"expected a dict of {section} settings"
            )
    return settings


def distributed_type(config: Mapping[str, Any] | None) -> str:
    """The paradigm ``config`` asks for: explicit ``distributed_type``, else inferred from its sections."""
    settings = _normalise(config)
    explicit = settings.get("distributed_type")
    if explicit is not None:
        value = str(explicit).upper()
        if value not in PARADIGM_FLAGS:
            raise ConfigurationError(
                f"accelerate(config={{'distributed_type': {explicit!r}}}): expected one of "
                f"{', '.join(PARADIGM_FLAGS)}"
            )
        return value
    if "fsdp" in settings and "deepspeed" in settings:
        raise ConfigurationError(
            "accelerate(config=...): both fsdp and deepspeed are configured; "
            "keep one, or set distributed_type"
        )
    if "fsdp" in settings:
        return "FSDP"
    if "deepspeed" in settings:
        return "DEEPSPEED"
    return "MULTI_GPU"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    if isinstance(value, Mapping):
        raise ConfigurationError(
            f"accelerate(config=...): {value!r} is nested; accelerate launch takes plain values "
            "on its command line (put a full DeepSpeed JSON in a file and pass "
            "deepspeed={'config_file': path})"
        )
    return str(value)


def _option(flag: str, value: Any) -> list[str]:
    return [flag, shlex.quote(_value(value))]


def _is_on(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("yes", "true", "1"))


def _num_processes(settings: Mapping[str, Any], num_nodes: int) -> int:
    value = settings.get("num_processes", num_nodes)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"accelerate(config={{'num_processes': {value!r}}}): expected a positive int"
        )
    if value != num_nodes:
        raise ConfigurationError(
            f"accelerate(config={{'num_processes': {value}}}) on a pool of {num_nodes} node(s): Skyward runs "
            "one worker process per node, so num_processes (total across nodes) must equal the node count; "
            "leave it out to get that default"
        )
    return value


def accelerate_flags(config: Mapping[str, Any] | None, context: LaunchContext) -> list[str]:
    """The ``accelerate launch`` options for this node, in the order documented in the module."""
    settings = _normalise(config)
    paradigm = distributed_type(settings)
    flags = [
        "--num_machines", str(context.num_nodes),
        "--machine_rank", str(context.node_id),
        "--main_process_ip", shlex.quote(str(context.head_addr)),
        "--main_process_port", str(context.rendezvous_port),
        "--num_processes", str(_num_processes(settings, context.num_nodes)),
    ]
    switch = PARADIGM_FLAGS[paradigm]
    if switch is not None:
        flags.append(switch)
    for name in _VALUE_SETTINGS:
        if settings.get(name) is not None:
            flags += _option(f"--{name}", settings[name])
    for name in _SWITCH_SETTINGS:
        if _is_on(settings.get(name)):
            flags.append(f"--{name}")
    if settings.get("rdzv_backend") is not None:
        flags += _option("--rdzv_backend", settings["rdzv_backend"])
    if _is_on(settings.get("debug")):
        flags.append("--debug")
    if paradigm == "FSDP":
        for key, value in settings.get("fsdp", {}).items():
            name = key if str(key).startswith("fsdp_") else f"fsdp_{key}"
            flags += _option(f"--{name}", value)
    if paradigm == "DEEPSPEED":
        deepspeed = dict(settings.get("deepspeed", {}))
        if "config_file" in deepspeed:
            deepspeed["deepspeed_config_file"] = deepspeed.pop("config_file")
        if context.num_nodes > 1:
            deepspeed.setdefault("deepspeed_multinode_launcher", "standard")
        for key, value in deepspeed.items():
            flags += _option(f"--{key}", value)
    return flags


def accelerate(config: AccelerateConfig | None = None) -> Plugin:
    """Run every node's worker under ``accelerate launch`` (FSDP, DeepSpeed, mixed precision).

    ``config`` has the shape of the YAML ``accelerate config`` writes (see ``AccelerateConfig``);
    ``fsdp_config``/``deepspeed_config`` are accepted as spellings of ``fsdp``/``deepspeed``. The
    topology (machines, rank, main process address and port) comes from the pool and must not be
    set here. The config is checked when the plugin is built, so a typo fails on the client.
    """
    settings = _normalise(config)
    paradigm = distributed_type(settings)
    for section, owner in (("fsdp", "FSDP"), ("deepspeed", "DEEPSPEED")):
        if section in settings and paradigm != owner:
            warnings.warn(
                f"accelerate(config=...): distributed_type={paradigm!r} ignores the {section} settings",
                UserWarning,
                stacklevel=2,
            )
    for section in ("fsdp", "deepspeed"):  # nested values fail here, on the client, not at launch
        for value in settings.get(section, {}).values():
            _value(value)

    def transform(image: Image, cluster: Any) -> Image:
        return image.with_pip("accelerate")

    def launcher(command: LaunchCommand, context: LaunchContext) -> LaunchCommand:
        if command.launcher:
            raise ConfigurationError(
                f"the accelerate plugin cannot wrap another launcher ({command.launcher!r}); "
                "list only one launcher plugin"
            )
        python = shlex.quote(context.python_bin)
        entrypoint = command.entrypoint
        flags = accelerate_flags(settings, context)
        if entrypoint == python or entrypoint.startswith(python + " "):
            entrypoint = entrypoint[len(python):].strip()
        else:
            flags.append("--no_python")  # the entrypoint is a program of its own, not python arguments
        return LaunchCommand(
            launcher=" ".join([python, ACCELERATE_CLI, *flags]), entrypoint=entrypoint, args=command.args
        )

    return Plugin.create("accelerate").with_image_transform(transform).with_launcher(launcher)
