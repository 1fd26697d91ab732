"""`sky.plugins.mps()`: NVIDIA Multi-Process Service, so concurrent tasks share a GPU efficiently.

Without MPS, CUDA contexts from different processes time-slice the GPU; with it, their kernels run
concurrently through one MPS server. The plugin

- adds a bootstrap op that starts the control daemon (`nvidia-cuda-mps-control -d`) with
  `CUDA_MPS_PIPE_DIRECTORY` / `CUDA_MPS_LOG_DIRECTORY` set, unless it is already running, and sets
  the daemon's defaults for the limits below (`set_default_active_thread_percentage`,
  `set_default_device_pinned_mem_limit`);
- sets the same variables in the image's environment, so every worker (the MPS clients) finds the
  daemon and carries the limits: `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` (share of the SMs one client
  may use, 1..100) and `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` (device memory one client may allocate,
  `"0=8G,1=8G"`).

`pinned_memory_limit` is one limit for every GPU of the node (`"8G"`, `"512M"`, `"16GB"`) or a
mapping of device ordinal to limit (`{0: "8G", 1: "4G"}`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from skyward.bootstrap.ops import Op
from skyward.errors import ConfigurationError
from skyward.extension.plugin import Plugin

__all__ = ["MPS_LOG_DIRECTORY", "MPS_PIPE_DIRECTORY", "mps", "mps_daemon_script"]

#: Where the daemon and its clients meet (CUDA's default pipe directory) and where it logs; both
#: are writable without root, and every worker gets the same values through the image env.
MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"
MPS_LOG_DIRECTORY = "/tmp/nvidia-mps-log"

_LIMIT = re.compile(r"^(?P<amount>\d+)\s*(?P<unit>[KMGT])B?$", re.IGNORECASE)

PinnedMemoryLimit = str | Mapping[int, str]


def _check_percentage(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise ConfigurationError(
            f"sky.plugins.mps(active_thread_percentage={value!r}): the share of the GPU's SMs one "
            "client may use is a whole percentage from 1 to 100, e.g. active_thread_percentage=50"
        )
    return value


def _limit(value: object, where: str) -> str:
    match = _LIMIT.match(value.strip()) if isinstance(value, str) else None
    if match is None or int(match["amount"]) == 0:
        raise ConfigurationError(
            f"sky.plugins.mps(pinned_memory_limit={where}): {value!r} is not a memory limit; write a "
            'positive whole amount with a unit K, M, G or T (optionally followed by B), e.g. "8G" or "512MB"'
        )
    return f"{int(match['amount'])}{match['unit'].upper()}"


def _check_pinned(value: object) -> dict[int, str] | str | None:
    """None, one normalized limit for every device ("8G"), or {device ordinal: limit}."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        if not value:
            raise ConfigurationError(
                "sky.plugins.mps(pinned_memory_limit={}): the mapping is empty; map device ordinals "
                'to limits, e.g. {0: "8G", 1: "4G"}, or pass one limit for every device ("8G")'
            )
        limits: dict[int, str] = {}
        for device, limit in value.items():
            if isinstance(device, bool) or not isinstance(device, int) or device < 0:
                raise ConfigurationError(
                    f"sky.plugins.mps(pinned_memory_limit=...): {device!r} is not a device ordinal; "
                    'keys are GPU indices 0, 1, ..., e.g. {0: "8G", 1: "4G"}'
                )
            limits[device] = _limit(limit, f"{{{device}: {limit!r}}}")
        return dict(sorted(limits.items()))
    return _limit(value, repr(value))


def _devices(cluster: Any) -> int:
    """GPUs per node as the spec asked for them (at least 1: a fractional share is one device)."""
    accelerator = getattr(getattr(cluster, "spec", None), "accelerator", None)
    count = getattr(accelerator, "count", 1) if accelerator is not None else 1
    return max(1, int(count))


def _per_device(pinned: dict[int, str] | str, devices: int) -> dict[int, str]:
    return pinned if isinstance(pinned, dict) else {device: pinned for device in range(devices)}


def _pinned_env(limits: dict[int, str]) -> str:
    return ",".join(f"{device}={limit}" for device, limit in limits.items())


def mps_daemon_script(
    *,
    active_thread_percentage: int | None = None,
    pinned_limits: Mapping[int, str] | None = None,
    pipe_directory: str = MPS_PIPE_DIRECTORY,
    log_directory: str = MPS_LOG_DIRECTORY,
) -> str:
    """The bash that starts the MPS control daemon (once) and sets its default limits."""
    exports = [
        f"export CUDA_MPS_PIPE_DIRECTORY={shlex.quote(pipe_directory)}",
        f"export CUDA_MPS_LOG_DIRECTORY={shlex.quote(log_directory)}",
    ]
    defaults: list[str] = []
    if active_thread_percentage is not None:
        exports.append(f"export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={active_thread_percentage}")
        defaults.append(f"set_default_active_thread_percentage {active_thread_percentage}")
    if pinned_limits:
        exports.append(f"export CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={_pinned_env(dict(pinned_limits))}")
        defaults += [f"set_default_device_pinned_mem_limit {d} {limit}" for d, limit in pinned_limits.items()]
    settings = "".join(
        f'echo "{command}" | nvidia-cuda-mps-control >/dev/null || {{\n'
        f'  echo "skyward mps: the MPS control daemon refused: {command}" >&2\n'
        "  exit 1\n"
        "}\n"
        for command in defaults
    )
    return (
        "# skyward mps: start the NVIDIA MPS control daemon\n"
        "if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then\n"
        '  echo "skyward mps: nvidia-cuda-mps-control not found; MPS needs an NVIDIA GPU driver" >&2\n'
        "  exit 1\n"
        "fi\n"
        + "".join(line + "\n" for line in exports)
        + 'mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"\n'
        'skyward_mps_pid="$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"\n'
        'if [ -f "$skyward_mps_pid" ] && kill -0 "$(cat "$skyward_mps_pid")" 2>/dev/null; then\n'
        '  echo "skyward mps: the MPS control daemon is already running"\n'
        "else\n"
        "  nvidia-cuda-mps-control -d ||\n"
        "    echo get_server_list | nvidia-cuda-mps-control >/dev/null 2>&1 || {\n"
        '    echo "skyward mps: could not start the MPS control daemon; see $CUDA_MPS_LOG_DIRECTORY" >&2\n'
        "    exit 1\n"
        "  }\n"
        "fi\n"
        + settings
    )


def mps(
    *,
    active_thread_percentage: int | None = None,
    pinned_memory_limit: PinnedMemoryLimit | None = None,
) -> Plugin:
    """Run the NVIDIA MPS daemon on every node and make the workers its clients.

    `active_thread_percentage` caps the share of SMs each client may use (1..100);
    `pinned_memory_limit` caps each client's device memory: `"8G"` for every GPU of the node, or
    `{0: "8G", 1: "4G"}` per device ordinal.
    """
    percentage = _check_percentage(active_thread_percentage)
    pinned = _check_pinned(pinned_memory_limit)

    def env(cluster: Any) -> dict[str, str]:
        values = {"CUDA_MPS_PIPE_DIRECTORY": MPS_PIPE_DIRECTORY, "CUDA_MPS_LOG_DIRECTORY": MPS_LOG_DIRECTORY}
        if percentage is not None:
            values["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(percentage)
        if pinned is not None:
            values["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = _pinned_env(_per_device(pinned, _devices(cluster)))
        return values

    def transform(image: Any, cluster: Any) -> Any:
        return image.with_env(**env(cluster))

    def bootstrap(cluster: Any) -> tuple[Op, ...]:
        limits = _per_device(pinned, _devices(cluster)) if pinned is not None else None
        script = mps_daemon_script(active_thread_percentage=percentage, pinned_limits=limits)
        return (Op(name="mps", script=script),)

    return Plugin.create("mps").with_image_transform(transform).with_bootstrap(bootstrap)

