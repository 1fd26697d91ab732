"""What a Lambda VM is given at launch and how it ends itself: its name, user data, end command.

Lambda launches VMs from its images with one registered SSH key and cloud-init user data. Each
node's user data (`user_data`, `MachineAccess.cloud_config`) installs the pool's host key as the
VM's only one before sshd starts, authorises the login key, keeps the guardian's API key for the
end command (mode 600, in the login user's home), and starts the node's guardian
(`skyward.guardian.boot`) with an initial lease, so a VM whose client died before its first login
still terminates itself.

Lambda has no tags the sweeper could rely on and no credential scoped to one instance: a VM is the
pool's by its name, `skyward-<pool>-<node>`, and it terminates itself through the API
(`end_command`) with an account key, which is why one is on the machine (`account` says which).
Powering off would not do: Lambda bills an instance until it is terminated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.providers import vm_boot
from skyward.providers.naming import MACHINE_PREFIX, machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

NAME_PREFIX = MACHINE_PREFIX
#: Where the user data keeps the guardian's API key for `end_command` (the login's home).
KEY_FILE = ".skyward-lambda.env"

#: The end command's program: terminate the instance named `name` (and, once known, with id
#: `own`): never one named otherwise, so a name reused by a replacement is matched by id too.
_END = """
import json, os, sys, urllib.request
url, name = sys.argv[1].rstrip("/"), sys.argv[2]
own = sys.argv[3] if len(sys.argv) > 3 else ""
path = os.path.join(os.path.expanduser("~"), ".skyward-lambda.env")
key = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)["LAMBDA_API_KEY"]
def call(method, route, body=None):
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json",
               "Accept": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + route, data, headers, method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")
rows = (call("GET", "/instances") or {}).get("data") or []
ids = [r["id"] for r in rows if r.get("name") == name and (not own or r.get("id") == own)]
if ids:
    call("POST", "/instance-operations/terminate", {"instance_ids": ids})
"""


def instance_name(pool_id: str, node: int) -> str:
    return machine_name(pool_id, node)


def end_command(api_url: str, name: str, instance_id: str | None = None) -> str:
    """What the node's guardian runs when the pool's lease lapses: the VM terminates itself
    through Lambda's API, found by its name (and its id once the first login knew it), with the
    key the user data kept. Python's standard library only: Lambda's images have python3."""
    return vm_boot.end_command(_END, api_url, name, *([instance_id] if instance_id else []))


def user_data(access: MachineAccess, guardian_key: str, user: str, guardian: BootGuardian | None) -> str:
    """The node's cloud-init user data: host key, login key, the guardian's key, the guardian."""
    keep = vm_boot.keep_secrets({"LAMBDA_API_KEY": guardian_key}, KEY_FILE)
    return access.cloud_config(guardian, user=user, commands=[keep])
