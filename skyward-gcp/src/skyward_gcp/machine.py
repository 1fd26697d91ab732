"""What a Compute Engine VM is given at creation, and how it ends itself.

Each node is one VM named `skyward-<pool>-<node>` and labelled `skyward-pool=<pool>`,
`skyward-node=<node>` (what `sky ls` / `sky down` look for: `sweep`). Its metadata carries a
`startup-script` that the guest environment runs as root at every boot: install the pool's host
key as the only one and authorise the login key for root (`MachineAccess.container_script`),
let root in by key alone, restart sshd so it answers with that key, and start the node's
guardian with an initial lease, so a VM whose client died before its first login still ends.
The private host key is in the VM's metadata, readable by whoever may read the project's VMs:
the same people who could log in to them through the console.

A VM deletes itself (`end_command`) with its own credential: the metadata server hands the VM's
service account a short-lived token (`instance/service-accounts/default/token`), which the VM
has because it is created with that account and the compute scope. Nothing of the client's
credentials is ever on the machine. The trade-off: that account may delete other VMs of the
project too (the default compute service account is a project editor); `GCP(service_account=
...)` names a narrower one (it needs `compute.instances.delete`).

The metadata server is `metadata.google.internal`, or `$GCE_METADATA_HOST` where set (the
variable google-auth honours; the tests' fake VMs set it to their own fake server).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from skyward.providers import vm_boot
from skyward.providers.access import HOST_KEY_VARIABLE
from skyward.providers.naming import machine_name, parse_machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess
    from skyward_gcp.catalog import Shape

POOL_LABEL = "skyward-pool"
NODE_LABEL = "skyward-node"
#: The scope a VM's token carries: enough to delete itself through the Compute Engine API.
VM_SCOPE = "https://www.googleapis.com/auth/compute"
#: What the guardian runs (python3's standard library only: every Google image has it).
_END = """
import json, os, sys, time, urllib.request
api = sys.argv[1].rstrip("/")
host = os.environ.get("GCE_METADATA_HOST") or "metadata.google.internal"
def meta(path):
    request = urllib.request.Request("http://%s/computeMetadata/v1/%s" % (host, path),
                                     headers={"Metadata-Flavor": "Google"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.read().decode()
for attempt in range(5):
    try:
        token = json.loads(meta("instance/service-accounts/default/token"))["access_token"]
        project, name = meta("project/project-id"), meta("instance/name")
        zone = meta("instance/zone").rsplit("/", 1)[-1]
        url = "%s/compute/v1/projects/%s/zones/%s/instances/%s" % (api, project, zone, name)
        request = urllib.request.Request(url, method="DELETE", headers={"Authorization": "Bearer " + token})
        urllib.request.urlopen(request, timeout=30).read()
        break
    except Exception as error:
        if getattr(error, "code", None) == 404:
            break
        time.sleep(2 ** attempt)
"""


def instance_name(pool_id: str, node: int) -> str:
    """Compute Engine names are lower case; a pool id is (`naming.new_pool_id`)."""
    return machine_name(pool_id, node).lower()


def firewall_name(pool_id: str) -> str:
    return f"skyward-{pool_id}-ssh"


def network_tag(pool_id: str) -> str:
    """The tag the pool's VMs carry, which its firewall rule targets (none other's)."""
    return f"skyward-{pool_id}"


def pool_of(name: object, labels: dict[str, str] | None) -> tuple[str, int] | None:
    """(pool, node) of a VM Skyward made: its name and its labels must agree; None otherwise."""
    found = parse_machine_name(name)
    labels = labels or {}
    if found is None or labels.get(POOL_LABEL) != found[0] or labels.get(NODE_LABEL) != str(found[1]):
        return None
    return found


def end_command(api_root: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the VM deletes itself through
    the Compute Engine API at `api_root`, with the token its metadata server gives it."""
    return vm_boot.end_command(_END, api_root)


def startup_script(access: MachineAccess, guardian: BootGuardian | None = None) -> str:
    """The VM's startup script (bash, as root, at boot). `set -e`: a VM that cannot install the
    pool's keys must never answer SSH with the image's."""
    lines = [
        "#!/bin/bash",
        "set -e",
        f"export {HOST_KEY_VARIABLE}={shlex.quote(access.host_key_b64)}",
        access.container_script(ssh_dir="/etc/ssh", home="/root"),
        "mkdir -p /etc/ssh/sshd_config.d && printf 'PermitRootLogin prohibit-password\\n'"
        " > /etc/ssh/sshd_config.d/60-skyward.conf",
        vm_boot.RESTART_SSHD,
    ]
    if guardian is not None:
        lines.append(guardian.command(home=vm_boot.HOME, inline=True))
    return "\n".join(lines) + "\n"


def instance_body(
    *,
    name: str,
    pool_id: str,
    node: int,
    zone: str,
    shape: Shape,
    spot: bool,
    image: str,
    disk_gb: int,
    network: str,
    service_account: str,
    script: str,
) -> Any:
    """The `instances.insert` body: the machine, its GPUs, labels, tag, disk, address and script."""
    from google.cloud import compute_v1

    scheduling = compute_v1.Scheduling(on_host_maintenance="TERMINATE", automatic_restart=not spot)
    if spot:
        scheduling = compute_v1.Scheduling(
            on_host_maintenance="TERMINATE",
            automatic_restart=False,
            provisioning_model="SPOT",
            instance_termination_action="DELETE",
        )
    accelerators = []
    if shape.attached:
        accelerators = [
            compute_v1.AcceleratorConfig(
                accelerator_type=f"zones/{zone}/acceleratorTypes/{shape.accelerator_type}",
                accelerator_count=shape.gpus,
            )
        ]
    items = [compute_v1.Items(key="startup-script", value=script)]
    if shape.gpus:
        items.append(compute_v1.Items(key="install-nvidia-driver", value="True"))  # Deep Learning VM images
    return compute_v1.Instance(
        name=name,
        machine_type=f"zones/{zone}/machineTypes/{shape.machine_type}",
        labels={POOL_LABEL: pool_id, NODE_LABEL: str(node)},
        tags=compute_v1.Tags(items=[network_tag(pool_id)]),
        disks=[
            compute_v1.AttachedDisk(
                boot=True,
                auto_delete=True,
                initialize_params=compute_v1.AttachedDiskInitializeParams(
                    source_image=image, disk_size_gb=disk_gb
                ),
            )
        ],
        network_interfaces=[
            compute_v1.NetworkInterface(
                network=network,
                access_configs=[compute_v1.AccessConfig(name="External NAT", type_="ONE_TO_ONE_NAT")],
            )
        ],
        guest_accelerators=accelerators,
        scheduling=scheduling,
        metadata=compute_v1.Metadata(items=items),
        service_accounts=[compute_v1.ServiceAccount(email=service_account, scopes=[VM_SCOPE])],
    )


def firewall_body(pool_id: str, network: str, port: int, cidr: str) -> Any:
    """The pool's rule: `port` over TCP from `cidr` alone, to the pool's VMs alone (by tag)."""
    from google.cloud import compute_v1

    return compute_v1.Firewall(
        name=firewall_name(pool_id),
        network=network,
        direction="INGRESS",
        priority=1000,
        description=f"Skyward pool {pool_id}: SSH from the client only",
        allowed=[compute_v1.Allowed(I_p_protocol="tcp", ports=[str(port)])],
        source_ranges=[cidr],
        target_tags=[network_tag(pool_id)],
    )
