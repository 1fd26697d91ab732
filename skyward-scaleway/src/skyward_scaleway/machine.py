"""What a Scaleway server is given when it is created and how it ends itself: its name, its
cloud-init user data, its end command.

A server is created stopped; its `cloud-init` user data (`PATCH /servers/{id}/user_data/cloud-init`)
is set before it powers on, and cloud-init reads it at first boot (a cloud-config:
`MachineAccess.cloud_config`). It installs the pool's host key as the only one before sshd first
starts, authorises the login key for root, keeps the guardian's secret key for the end command
(mode 600, root's home) and starts the node's guardian with an initial lease, so a server whose
client died before its first login still ends itself. Until the server answers with our key the
provider waits (`skyward.providers.probe`), never trusting another.

Scaleway has no server-scoped credential: a server ends itself through the API (`end_command`,
the `terminate` action) with a secret key, found by its name `skyward-<pool>-<node>` and the
`skyward` tag. The key it keeps is `Scaleway(guardian_secret_key=...)`, else the pool's: an IAM API
key limited to Instances in the pool's project is the safe one (docs/scaleway.md). Powering off
would not do: a stopped GPU Instance still bills its volumes, and keeps its place in the quota.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.providers import vm_boot
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

#: A Scaleway server belongs to a pool by its name, `skyward-<pool>-<node>` (and its tag).
NAME_PREFIX = "skyward-"
#: Where the user data keeps the secret key for `end_command` (root's home).
CREDENTIALS_FILE = ".skyward-scaleway.env"

_END = """
import json, os, sys, urllib.parse, urllib.request
url, zone, name, tag = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
path = os.path.join(os.path.expanduser("~"), ".skyward-scaleway.env")
env = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
headers = {"X-Auth-Token": env["SCW_SECRET_KEY"], "Content-Type": "application/json"}
base = url + "/instance/v1/zones/" + zone + "/servers"
def call(method, route, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + route, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read()
    return json.loads(text) if text else None
query = urllib.parse.urlencode({"name": name, "tags": tag, "per_page": 100})
for row in (call("GET", "?" + query) or {}).get("servers") or []:
    if row.get("name") == name and tag in (row.get("tags") or []):
        call("POST", "/" + row["id"] + "/action", {"action": "terminate"})
"""


def zone_of(instance_id: str) -> tuple[str, str]:
    """(zone, server id) of an Instance id `<zone>/<server id>`: the API is zonal."""
    zone, _, server = instance_id.partition("/")
    return zone, server


def server_name(pool_id: str, node: int) -> str:
    """The server's name and hostname; lower case, as hostnames are (pool ids are anyway)."""
    return machine_name(pool_id, node).lower()


def end_command(api_url: str, zone: str, name: str, tag: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the server terminates itself
    (`POST /servers/{id}/action`), found by its name and tag, with the key the user data kept.
    Its Block Storage boot volume outlives it, detached (a volume in use cannot be deleted, and
    the program ends with the server): it carries the server's name and Skyward's tag, so `sky ls`
    lists it and `sky down` deletes it. Python's standard library only: Scaleway's Ubuntu images
    have python3."""
    return vm_boot.end_command(_END, api_url, zone, name, tag)


def user_data(access: MachineAccess, secret_key: str, guardian: BootGuardian | None = None) -> str:
    """The node's cloud-config (`MachineAccess.cloud_config`): the pool's host key as the only
    one, the login key for root, the key kept for the end command, then the boot guardian."""
    keep = vm_boot.keep_secrets({"SCW_SECRET_KEY": secret_key}, CREDENTIALS_FILE)
    return access.cloud_config(guardian, commands=[keep])
