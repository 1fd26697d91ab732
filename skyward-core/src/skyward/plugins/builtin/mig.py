"""`sky.plugins.mig(profile)`: split every GPU of a node into MIG instances, one worker per instance.

Multi-Instance GPU partitions an A100/A30/H100/H200/B200 into isolated slices, each with its own
compute units and memory. The plugin

- validates the profile on the client (`"3g.40gb"`, ...) against NVIDIA's published profiles,
  with an error that lists the valid ones;
- adds a bootstrap op that enables MIG mode on every GPU (`nvidia-smi -i N -mig 1`) and creates
  as many GPU instances of the profile as fit, with their compute instances
  (`nvidia-smi mig -i N -cgi 3g.40gb,3g.40gb -C`); a node that already has exactly those
  instances is left alone, so re-running the bootstrap is safe;
- pins each worker to its own instance: before the first task (`around_app`, and again in each
  executor subprocess through `around_process`) it reads the MIG UUIDs from `nvidia-smi -L` and
  sets `CUDA_VISIBLE_DEVICES` to the one at index `instance_info().worker`.

A node therefore runs `workers_per_node(spec.plugins, spec.accelerator)` workers
(`mig_workers_per_node("3g.40gb") == 2` per GPU); the pool starts that many workers per node and
gives each its `worker` index and `workers_per_node` in `InstanceInfo`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from skyward.bootstrap.ops import Op
from skyward.errors import ConfigurationError, PluginError
from skyward.extension.plugin import Plugin

__all__ = [
    "MIG_PROFILES",
    "MigDevice",
    "MigSetup",
    "mig",
    "mig_devices",
    "mig_instances_per_gpu",
    "mig_profile",
    "mig_setup_script",
    "mig_workers_per_node",
    "parse_mig_uuids",
    "workers_per_node",
]

_80GB = {"1g.10gb": 7, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1}


@attrs.frozen
class _Family:
    """One MIG-capable card: names it goes by, memory in GB, and instances per GPU of each profile.

    A GPU has 7 compute slices and 8 memory slices, so `1g` gives 7 instances unless it takes two
    memory slices (`1g.20gb` on an 80 GB card gives 4). `+me` (media extension) profiles are left
    out: one of them fits per GPU, which defeats one worker per instance.
    """

    label: str
    names: tuple[str, ...]
    memory_gb: float
    profiles: dict[str, int]


_FAMILIES: tuple[_Family, ...] = (
    _Family("A100 80GB", ("A100", "A800"), 80, _80GB),
    _Family("H100 80GB", ("H100", "H800"), 80, _80GB),
    _Family("A100 40GB", ("A100", "A800"), 40, {
        "1g.5gb": 7, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1,
    }),
    _Family("H100 NVL 94GB", ("H100",), 94, {
        "1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1, "7g.94gb": 1,
    }),
    _Family("H200 141GB", ("H200",), 141, {
        "1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1,
    }),
    _Family("B200 180GB", ("B200",), 180, {
        "1g.23gb": 7, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1, "7g.180gb": 1,
    }),
    _Family("A30 24GB", ("A30",), 24, {"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1}),
)

#: Every valid profile name, in the order of the table above.
MIG_PROFILES: tuple[str, ...] = tuple(dict.fromkeys(p for family in _FAMILIES for p in family.profiles))

_MIG_GPUS = ("A100", "A30", "H100", "H200", "B200")
# `nvidia-smi -L`, R470+:   "  MIG 3g.40gb     Device  0: (UUID: MIG-c6d4f1ef-...)"
# older drivers (R450/460): "  MIG 3g.20gb Device 0: (UUID: MIG-GPU-5d5ba0d6-.../1/0)"
_MIG_LINE = re.compile(r"^\s*MIG\s+(?P<profile>\S+)\s+Device\s+\d+:\s+\(UUID:\s*(?P<uuid>MIG-[^)\s]+)\)")


def _profiles_text(families: tuple[_Family, ...] | list[_Family] = _FAMILIES) -> str:
    return "\n".join(f"  {family.label}: {', '.join(family.profiles)}" for family in families)


def _normalize(profile: object) -> str:
    if not isinstance(profile, str):
        raise ConfigurationError(
            f"sky.plugins.mig(profile={profile!r}): the profile is a string such as \"3g.40gb\"; "
            f"valid profiles by GPU:\n{_profiles_text()}"
        )
    name = re.sub(r"^mig[\s-]+", "", profile.strip().lower())
    if name not in MIG_PROFILES:
        raise ConfigurationError(
            f"sky.plugins.mig({profile!r}) is not a MIG profile; valid profiles by GPU:\n{_profiles_text()}"
        )
    return name


def _compact(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", name.upper())


def _family(profile: str, gpu: str | None = None, memory_gb: float | None = None) -> _Family:
    """The card `profile` is partitioning. `gpu` (an accelerator name such as "A100") and
    `memory_gb` narrow it down, which matters where a name means different slices on different
    cards (`1g.10gb` is a seventh of an 80 GB card but a quarter of an A100 40GB); a GPU that is
    not MIG-capable, or a profile that is not one of the card's, is a `ConfigurationError`."""
    families = list(_FAMILIES)
    if gpu is not None:
        families = [f for f in families if any(n in _compact(gpu) for n in f.names)]
        if not families:
            raise ConfigurationError(
                f"sky.plugins.mig() needs a MIG-capable GPU ({', '.join(_MIG_GPUS)}), but this pool "
                f"asks for {gpu}; pick e.g. accelerator=sky.accelerators.A100() or H100()"
            )
    if memory_gb is not None:
        sized = [f for f in families if abs(f.memory_gb - memory_gb) <= 0.1 * f.memory_gb]
        families = sized or families
    fitting = [f for f in families if profile in f.profiles]
    if not fitting:
        card = gpu if memory_gb is None else f"{gpu or 'GPU'} {memory_gb:g}GB"
        raise ConfigurationError(
            f"sky.plugins.mig({profile!r}) is not a profile of this pool's {card}; its profiles:\n"
            f"{_profiles_text(families)}"
        )
    if memory_gb is None:
        return fitting[0]
    return min(fitting, key=lambda f: abs(f.memory_gb - memory_gb))


def mig_instances_per_gpu(profile: str, *, gpu: str | None = None, memory_gb: float | None = None) -> int:
    """How many instances of `profile` fit on one GPU: `7g` -> 1, `4g` -> 1, `3g` -> 2, `2g` -> 3,
    `1g` -> 7 (4 where the profile takes two memory slices, or on an A30).

    `gpu` and `memory_gb` describe the card when known (`"A100"`, 40) and are checked against it.
    """
    name = _normalize(profile)
    return _family(name, gpu, memory_gb).profiles[name]


def _whole_gpus(gpus: object) -> int:
    if isinstance(gpus, bool) or not isinstance(gpus, int | float) or gpus < 1 or int(gpus) != gpus:
        raise ConfigurationError(
            f"MIG partitions whole GPUs, but the node has {gpus!r} of them; ask for a whole number "
            "of GPUs, e.g. accelerator=sky.accelerators.A100(count=1)"
        )
    return int(gpus)


def mig_workers_per_node(
    profile: str, *, gpus: int = 1, gpu: str | None = None, memory_gb: float | None = None
) -> int:
    """Workers a node runs under `mig(profile)`: instances per GPU times GPUs per node.

    `mig_workers_per_node("3g.40gb") == 2`; `mig_workers_per_node("1g.10gb", gpus=8) == 56`.
    """
    return mig_instances_per_gpu(profile, gpu=gpu, memory_gb=memory_gb) * _whole_gpus(gpus)


def _accelerator_shape(accelerator: Any) -> tuple[int, str | None, float | None]:
    """(whole GPUs per node, card name, memory of one card in GB) of a spec's accelerator."""
    if accelerator is None:
        return 1, None, None
    memory = getattr(accelerator, "memory_gb", None)
    name = getattr(accelerator, "name", None)
    return _whole_gpus(getattr(accelerator, "count", 1)), name, (float(memory) if memory else None)


# -- bootstrap -------------------------------------------------------------------------------------


def mig_setup_script(profile: str, instances: int) -> str:
    """The bash that enables MIG and creates `instances` x `profile` on every GPU of the node."""
    profile = _normalize(profile)
    cgi = ",".join([profile] * instances)
    q = shlex.quote
    return f"""\
# skyward mig: {instances} x {profile} MIG instance(s) on every GPU, one worker each
SKYWARD_MIG_SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SKYWARD_MIG_SUDO="sudo -n"; fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "skyward mig: nvidia-smi not found; MIG needs an A100, A30, H100, H200 or B200 GPU" >&2
  exit 1
fi
for gpu in $(nvidia-smi --query-gpu=index --format=csv,noheader); do
  mode="$(nvidia-smi -i "$gpu" --query-gpu=mig.mode.current --format=csv,noheader | tr -d ' ')"
  if [ "$mode" != "Enabled" ]; then
    $SKYWARD_MIG_SUDO nvidia-smi -i "$gpu" -mig 1 || {{
      echo "skyward mig: could not enable MIG mode on GPU $gpu (needs root and a MIG-capable GPU)" >&2
      exit 1
    }}
    mode="$(nvidia-smi -i "$gpu" --query-gpu=mig.mode.current --format=csv,noheader | tr -d ' ')"
    if [ "$mode" != "Enabled" ]; then
      $SKYWARD_MIG_SUDO nvidia-smi -i "$gpu" -r >/dev/null 2>&1 || true
      mode="$(nvidia-smi -i "$gpu" --query-gpu=mig.mode.current --format=csv,noheader | tr -d ' ')"
    fi
    if [ "$mode" != "Enabled" ]; then
      echo "skyward mig: MIG mode on GPU $gpu is pending a GPU reset or a reboot (current mode: $mode)" >&2
      exit 1
    fi
  fi
  have="$(nvidia-smi mig -i "$gpu" -lgi 2>/dev/null | grep -c {q(f"MIG {profile} ")} || true)"
  if [ "$have" != "{instances}" ]; then
    $SKYWARD_MIG_SUDO nvidia-smi mig -i "$gpu" -dci >/dev/null 2>&1 || true
    $SKYWARD_MIG_SUDO nvidia-smi mig -i "$gpu" -dgi >/dev/null 2>&1 || true
    $SKYWARD_MIG_SUDO nvidia-smi mig -i "$gpu" -cgi {cgi} -C || {{
      echo "skyward mig: could not create {instances} x {profile} on GPU $gpu (not a profile of it?)" >&2
      exit 1
    }}
  fi
done
nvidia-smi -L
"""


@attrs.frozen
class MigWorkers:
    """Workers per node for a spec: one per MIG instance on the node's GPUs."""

    profile: str

    def __call__(self, spec: Any) -> int:
        return workers_per_node(spec.plugins, spec.accelerator)


@attrs.frozen
class MigSetup:
    """The mig plugin's bootstrap factory; its `profile` is how the pool recognizes a MIG plugin."""

    profile: str

    def __call__(self, cluster: Any) -> tuple[Op, ...]:
        _, gpu, memory_gb = _accelerator_shape(getattr(getattr(cluster, "spec", None), "accelerator", None))
        instances = mig_instances_per_gpu(self.profile, gpu=gpu, memory_gb=memory_gb)
        return (Op(name="mig", script=mig_setup_script(self.profile, instances)),)


# -- worker side -----------------------------------------------------------------------------------


def _nvidia_smi_list() -> str:
    """`nvidia-smi -L` on this machine (tests replace this function)."""
    try:
        result = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60, check=False)
    except FileNotFoundError:
        raise PluginError(
            "the mig plugin needs nvidia-smi on the worker to find its MIG instance, and it is not on PATH"
        ) from None
    if result.returncode != 0:
        raise PluginError(f"nvidia-smi -L failed (exit {result.returncode}): {result.stderr.strip()}")
    return result.stdout


def parse_mig_uuids(listing: str, profile: str | None = None) -> list[str]:
    """The MIG device UUIDs in an `nvidia-smi -L` listing, in listing order (GPU 0's first);
    only those of `profile` when given."""
    uuids = []
    for line in listing.splitlines():
        match = _MIG_LINE.match(line)
        if match and (profile is None or match["profile"].lower() == profile):
            uuids.append(match["uuid"])
    return uuids


def mig_devices(profile: str | None = None) -> list[str]:
    """This machine's MIG device UUIDs (of `profile` when given), from `nvidia-smi -L`."""
    return parse_mig_uuids(_nvidia_smi_list(), _normalize(profile) if profile is not None else None)


@attrs.frozen
class MigDevice:
    """`around_app` / `around_process`: `CUDA_VISIBLE_DEVICES` = this worker's MIG instance."""

    profile: str

    @contextmanager
    def __call__(self, info: Any) -> Iterator[None]:
        worker = int(getattr(info, "worker", 0))
        uuids = parse_mig_uuids(_nvidia_smi_list(), self.profile)
        if not uuids:
            raise PluginError(
                f"the mig plugin found no {self.profile} MIG instance on this node (nvidia-smi -L lists "
                "none); the mig bootstrap op creates them, so check the bootstrap log"
            )
        if worker >= len(uuids):
            raise PluginError(
                f"worker {worker} has no {self.profile} MIG instance of its own: this node has "
                f"{len(uuids)}, for workers 0..{len(uuids) - 1}"
            )
        previous = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = uuids[worker]
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = previous


# -- the plugin and what the pool reads from it ----------------------------------------------------


def mig(profile: str) -> Plugin:
    """One worker per MIG instance: `sky.plugins.mig("3g.40gb")` runs 2 workers per A100/H100 80GB.

    Valid profiles: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb (A100 80GB, H100 80GB);
    1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb (A100 40GB); and the H100 NVL, H200, B200
    and A30 profiles listed in `MIG_PROFILES`.
    """
    name = _normalize(profile)
    device = MigDevice(name)
    return (
        Plugin.create("mig")
        .with_bootstrap(MigSetup(name))
        .with_around_app(device)
        .with_around_process(device)
        .with_workers_per_node(MigWorkers(name))
    )


def mig_profile(plugin: Any) -> str | None:
    """The profile of a plugin built by `mig()` (also after `.with_*` changes), else None."""
    bootstrap = getattr(plugin, "bootstrap", None)
    return bootstrap.profile if isinstance(bootstrap, MigSetup) else None


def workers_per_node(plugins: Iterable[Any], accelerator: Any = None) -> int:
    """Workers per node a pool with `plugins` on `accelerator` must start: 1 without a mig plugin.

    This is what the pool puts in `InstanceInfo.workers_per_node` (and it starts that many workers
    on each node, numbered 0..n-1 in `InstanceInfo.worker`).
    """
    profiles = [p for p in (mig_profile(plugin) for plugin in plugins) if p is not None]
    if not profiles:
        return 1
    if len(profiles) > 1:
        raise ConfigurationError(
            f"a pool takes one mig plugin, got {len(profiles)} ({', '.join(profiles)}); "
            "keep the one whose profile you want"
        )
    gpus, gpu, memory_gb = _accelerator_shape(accelerator)
    return mig_workers_per_node(profiles[0], gpus=gpus, gpu=gpu, memory_gb=memory_gb)

