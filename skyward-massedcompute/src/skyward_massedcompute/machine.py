"""What a Massed Compute machine is given at deploy time and how it ends itself: its name, its
startup command, its end command.

A deploy takes a `command` Massed Compute runs at startup (as root) and the public keys to let in
(`sshKey`). The command is `skyward.providers.vm_boot.startup_script`: the pool's host key as the
only one, the login key for root, sshd restarted, the account's API key kept in
`/root/.skyward-massedcompute.env` (mode 600) and the node's guardian started with an initial
lease, so a machine whose client died before its first login still deletes itself.

Massed Compute has no tags and no machine-scoped credential: a machine is the pool's by its
name, `skyward-<pool>-<node>`, and it deletes itself through the API (`end_command`) by that name
with the account's key, which is why the key is on the machine (see docs/massedcompute.md for the
trade-off). Powering off would not do: the API lists running machines and bills them until they
are terminated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.providers import vm_boot
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

NAME_PREFIX = "skyward-"
#: Where the startup command keeps the account's API key for `end_command` (root's home).
KEY_FILE = ".skyward-massedcompute.env"

_END = """
import json, os, sys, urllib.request
url, name = sys.argv[1].rstrip("/"), sys.argv[2]
path = os.path.join(os.path.expanduser("~"), ".skyward-massedcompute.env")
env = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
headers = {"Authorization": "Bearer " + env["MASSED_API_KEY"], "Content-Type": "application/json",
           "Accept": "application/json"}
def call(method, route, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + route, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")
rows = (call("GET", "/instance") or {}).get("runningInstances") or []
uuids = [row["uuid"] for row in rows if row.get("name") == name]
if uuids:
    call("POST", "/instance/terminate", {"instanceUuids": uuids})
"""


def instance_name(pool_id: str, node: int) -> str:
    """Lower case, as every other name Skyward gives a machine whose cloud may fold case."""
    return machine_name(pool_id, node).lower()


def end_command(api_url: str, name: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the machine terminates itself
    through the API, found by its name, with the key the startup command kept."""
    return vm_boot.end_command(_END, api_url, name)


def startup_command(access: MachineAccess, api_key: str, guardian: BootGuardian | None = None) -> str:
    return vm_boot.startup_script(
        access, secrets={"MASSED_API_KEY": api_key}, secrets_file=KEY_FILE, guardian=guardian
    )
