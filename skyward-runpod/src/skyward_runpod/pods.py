"""What a pod is asked to be (the create request, its start command) and what it says back.

The start command is the container's whole life: install the pool's host key and login key
(`MachineAccess.container_script`, reading the private key from `$SKYWARD_SSH_HOST_KEY`), start
sshd with exactly that host key (installing openssh-server first on an image without it), then
keep the container alive. RunPod's own images would also read `PUBLIC_KEY` in their start script;
it is set too, so a pod made from a template behaves the same. Skyward's workers then arrive over
SSH, like on any other machine.
"""

from __future__ import annotations

import math
import shlex
from typing import TYPE_CHECKING, Any

from skyward.providers.access import HOST_KEY_VARIABLE
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.market.rental import Rental
    from skyward.providers.cloud import MachineAccess
    from skyward.spec import Spec
    from skyward_runpod.config import RunPod

#: The one port a pod exposes: sshd, over RunPod's public TCP mapping.
SSH_PORT = "22/tcp"
#: The environment variable holding the pool id, so a pod says which pool it belongs to.
POOL_VARIABLE = "SKYWARD_POOL"
#: RunPod has no tags: a pod belongs to a pool by its name, `skyward-<pool>-<node>`.
NAME_PREFIX = "skyward-"
#: Where the start command keeps the pod's own API key (mode 600, in the login's home folder) for
#: `end_command`: RunPod puts `RUNPOD_API_KEY` (scoped to this pod) in the container's environment,
#: which SSH logins do not get.
IDENTITY_FILE = ".skyward-runpod.env"


def pod_name(pool_id: str, node: int) -> str:
    return machine_name(pool_id, node)


def start_command(
    access: MachineAccess,
    *,
    ssh_dir: str = "/etc/ssh",
    home: str = "/root",
    guardian: BootGuardian | None = None,
) -> str:
    """The shell the pod's container runs (as root): keys, the pod's own API key kept for
    `end_command`, the node's guardian (with `guardian`: from boot, so that a pod whose client
    died before logging in still deletes itself), then sshd, then stay up.

    `set -e` stops the container if the keys cannot be installed: a pod that cannot prove its
    identity must never answer. sshd is started with `-h` on our key, so whatever the image's
    sshd_config lists, it can only present the key the pool pins.
    """
    q = shlex.quote
    key = f"{ssh_dir}/ssh_host_ed25519_key"
    identity = q(f"{home}/{IDENTITY_FILE}")
    return "\n".join([
        "set -e",
        f'test -n "${HOST_KEY_VARIABLE}" || {{ echo "{HOST_KEY_VARIABLE} is not set" >&2; exit 1; }}',
        'export PATH="$PATH:/usr/sbin:/usr/local/sbin"',
        access.container_script(ssh_dir=ssh_dir, home=home),
        f"(umask 077; printf 'RUNPOD_API_KEY=%s\\n' \"${{RUNPOD_API_KEY:-}}\" > {identity})",
        *([guardian.command(home=f'"${{HOME:-{home}}}"')] if guardian is not None else []),
        "if ! command -v sshd >/dev/null 2>&1; then",
        "  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server",
        "fi",
        "mkdir -p /run/sshd 2>/dev/null || true",
        f'"$(command -v sshd)" -h {q(key)}',
        "exec sleep infinity",
    ])


def pod_request(
    *,
    config: RunPod,
    spec: Spec,
    offer: Rental,
    access: MachineAccess,
    pool_id: str,
    node: int,
    guardian: BootGuardian | None = None,
) -> dict[str, Any]:
    """The `POST /pods` body for one node (fields as RunPod's "Create a new Pod" documents them);
    with `guardian`, the pod starts it at boot (its source in `$SKYWARD_GUARDIAN`)."""
    body: dict[str, Any] = {
        "name": pod_name(pool_id, node),
        "imageName": config.container_image,
        "cloudType": offer.offer.region,
        "containerDiskInGb": spec.disk_gb or config.container_disk_gb,
        "ports": [SSH_PORT],
        "supportPublicIp": True,
        "env": {
            HOST_KEY_VARIABLE: access.host_key_b64,
            "PUBLIC_KEY": access.login_key,
            POOL_VARIABLE: pool_id,
        },
        "dockerEntrypoint": ["bash", "-c"],
        "dockerStartCmd": [start_command(access, guardian=guardian)],
    }
    if guardian is not None:
        from skyward.guardian.boot import SOURCE_VARIABLE, packed

        body["env"][SOURCE_VARIABLE] = packed()
    data_centers = config.data_center_ids or ((spec.region,) if spec.region else None)
    if data_centers:
        body["dataCenterIds"] = list(data_centers)
    gpu_types, count = offer.ref, int(offer.offer.accelerator_count)
    if gpu_types:
        body["computeType"] = "GPU"
        body["gpuTypeIds"] = [t.id for t in gpu_types]
        body["gpuCount"] = count
        body["interruptible"] = offer.spot
        if spec.vcpus:
            body["minVCPUPerGPU"] = math.ceil(spec.vcpus / count)
        if spec.memory_gb:
            body["minRAMPerGPU"] = math.ceil(spec.memory_gb / count)
    else:
        body["computeType"] = "CPU"
        if spec.vcpus:
            body["vcpuCount"] = math.ceil(spec.vcpus)
    return body


def end_command(rest_url: str, pod_id: str | None) -> str:
    """What the node's guardian runs when the pool's lease lapses: the pod deletes itself through
    RunPod's API, by its own id (given here: `$RUNPOD_POD_ID` is not set in an SSH login; None
    for the guardian started by the container, which has it) and with its own pod-scoped key, else
    with runpodctl. Powering the container off would leave a pod."""
    q = shlex.quote
    pod = q(pod_id) if pod_id is not None else '"$RUNPOD_POD_ID"'
    url = q(f"{rest_url.rstrip('/')}/pods/") + pod
    return (
        f'[ -f "$HOME/{IDENTITY_FILE}" ] && . "$HOME/{IDENTITY_FILE}"; '
        f'curl -fsS -X DELETE -H "Authorization: Bearer $RUNPOD_API_KEY" {url} || '
        f"runpodctl remove pod {pod}"
    )


def ssh_address(pod: dict[str, Any]) -> tuple[str, int] | None:
    """(public IP, public port of 22) once RunPod reports both, else None (still starting)."""
    ip = pod.get("publicIp")
    mappings = pod.get("portMappings") or {}
    port = mappings.get("22") if isinstance(mappings, dict) else None
    if not ip or port in (None, "", 0):
        return None
    try:
        return str(ip), int(port)
    except (TypeError, ValueError):
        return None


def cost_per_hour(pod: dict[str, Any]) -> float:
    """`costPerHr` (RunPod sends it as a string, "0.74"); 0.0 when missing."""
    for field in ("adjustedCostPerHr", "costPerHr"):
        try:
            value = float(pod.get(field) or 0)
        except (TypeError, ValueError):
            continue
        if value > 0:
            return value
    return 0.0


def reclaimed(pod: dict[str, Any] | None) -> str | None:
    """Why RunPod took an interruptible (spot) pod back, or None while it has not: such a pod is
    stopped by RunPod, and reads `desiredStatus: EXITED` (a pod the pool deletes is gone instead)."""
    if pod is None or not pod.get("interruptible") or pod.get("desiredStatus") != "EXITED":
        return None
    return f"interruptible pod reclaimed by RunPod ({pod.get('lastStatusChange') or 'EXITED'})"


def gone(pod: dict[str, Any] | None) -> bool:
    """Whether the pod ended for good: deleted, terminated, or its container exited."""
    return pod is None or pod.get("desiredStatus") in ("TERMINATED", "EXITED")
