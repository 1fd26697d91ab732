"""What a Vultr instance is given when it is created and how it ends itself: its label, its user
data, its end command.

Vultr creates an instance from an OS (`os_id`) or a Marketplace image (`image_id`), with SSH keys
registered on the account, a firewall group, tags, and user data that cloud-init runs as root at
first boot when it is a script. Each node's user data (`user_data`) installs the pool's host key
as the only one and authorises the login key (`MachineAccess.container_script`, the key read from
the script's own `SKYWARD_SSH_HOST_KEY`), restarts sshd so it presents that key, keeps the API key
for the end command (mode 600, root's home), and starts the node's guardian
(`skyward.guardian.boot`) with an initial lease, so an instance whose client died before its first
login still deletes itself. The image's sshd may answer with its own key until the script ran: the
provider waits for ours (`skyward.providers.probe`), never trusting another.

Vultr has no instance-scoped credentials: an instance deletes itself through the API
(`end_command`) with the account's key, found by its label `skyward-<pool>-<node>` and the
`skyward` tag, which is why the key is on the machine. Halting would not do: a stopped Vultr
instance is billed as a running one.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from skyward.providers import vm_boot
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

#: A Vultr instance belongs to a pool by its label, `skyward-<pool>-<node>` (and its tag).
NAME_PREFIX = "skyward-"
#: Where the user data keeps the API key for `end_command` (root's home).
CREDENTIALS_FILE = ".skyward-vultr.env"

_END = """
import json, os, sys, urllib.parse, urllib.request
url, label, tag = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
path = os.path.join(os.path.expanduser("~"), ".skyward-vultr.env")
env = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
headers = {"Authorization": "Bearer " + env["VULTR_API_KEY"], "Accept": "application/json"}
def call(method, route):
    request = urllib.request.Request(url + route, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read()
    return json.loads(text) if text else None
query = urllib.parse.urlencode({"label": label, "tag": tag, "per_page": 500})
rows = (call("GET", "/instances?" + query) or {}).get("instances") or []
for row in rows:
    if row.get("label") == label and tag in (row.get("tags") or []):
        call("DELETE", "/instances/" + row["id"])
"""


def label(pool_id: str, node: int) -> str:
    """The instance's label and hostname; lower case, as hostnames are (pool ids are anyway)."""
    return machine_name(pool_id, node).lower()


def end_command(api_url: str, name: str, tag: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the instance deletes itself
    through Vultr's API (`DELETE /instances/{id}`), found by its label and tag, with the key the
    user data kept. Python's standard library only: Vultr's Ubuntu images have python3."""
    return vm_boot.end_command(_END, api_url, name, tag)


def user_data(access: MachineAccess, api_key: str, guardian: BootGuardian | None = None) -> str:
    """The node's first-boot script (bash, run as root by cloud-init; `vm_boot.startup_script`)."""
    return vm_boot.startup_script(
        access, secrets={"VULTR_API_KEY": api_key}, secrets_file=CREDENTIALS_FILE, guardian=guardian
    )


def encoded(script: str) -> str:
    """User data as Vultr takes it: base64."""
    return base64.b64encode(script.encode()).decode()
