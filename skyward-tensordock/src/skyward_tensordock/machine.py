"""What a TensorDock VM is given at deploy time and how it ends itself: its name, its cloud-init
script, its end command.

A deploy takes a `cloudinit_script` (cloud-config the VM runs at first boot, as root). Ours has one
`runcmd`: `skyward.providers.vm_boot.startup_script`, carried base64-encoded so no quoting or line
break of it can be bent on the way: the pool's host key as the only one, the login key for root,
sshd restarted, the authorization pair kept in `/root/.skyward-tensordock.env` (mode 600) and the
node's guardian started with an initial lease, so a VM whose client died before its first login
still deletes itself. The cloud-config is JSON (which YAML reads) on one line after its header, and
its line breaks are sent escaped ("\\n"), as the one published client that deployed through this
API (dstack's) sent them.

TensorDock has no tags and no VM-scoped credential: a VM is the pool's by its name,
`skyward-<pool>-<node>`, and it deletes itself through the API (`end_command`) by that name with
the organization's pair, which is why the pair is on the VM (see docs/tensordock.md for the
trade-off). Stopping would not do: a stopped VM keeps billing its storage.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING

from skyward.providers import vm_boot
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess
    from skyward_tensordock.account import Credentials

NAME_PREFIX = "skyward-"
#: Where the startup script keeps the authorization pair for `end_command` (root's home).
KEY_FILE = ".skyward-tensordock.env"
CLOUD_CONFIG_HEADER = "#cloud-config"

_END = """
import json, os, sys, urllib.parse, urllib.request
url, name = sys.argv[1].rstrip("/"), sys.argv[2]
path = os.path.join(os.path.expanduser("~"), ".skyward-tensordock.env")
env = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
pair = {"api_key": env["TENSORDOCK_API_KEY"], "api_token": env["TENSORDOCK_API_TOKEN"]}
def call(route, **form):
    data = urllib.parse.urlencode({**pair, **form}).encode()
    request = urllib.request.Request(url + route, data=data, method="POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null") or {}
rows = call("/client/list").get("virtualmachines") or {}
for server, row in rows.items():
    if row.get("name") == name:
        call("/client/delete/single", server=server)
"""


def instance_name(pool_id: str, node: int) -> str:
    """Lower case, as every other name Skyward gives a machine whose cloud may fold case."""
    return machine_name(pool_id, node).lower()


def end_command(api_url: str, name: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the VM deletes itself through
    the API, found by its name, with the pair the startup script kept."""
    return vm_boot.end_command(_END, api_url, name)


def startup_script(access: MachineAccess, credentials: Credentials, guardian: BootGuardian | None) -> str:
    secrets = {"TENSORDOCK_API_KEY": credentials.api_key, "TENSORDOCK_API_TOKEN": credentials.api_token}
    return vm_boot.startup_script(access, secrets=secrets, secrets_file=KEY_FILE, guardian=guardian)


def cloud_init(script: str) -> str:
    """The `cloudinit_script` field: a cloud-config whose one command runs `script` (see the module)."""
    encoded = base64.b64encode(script.encode()).decode()
    config = {"runcmd": [["bash", "-c", f"echo {encoded} | base64 -d | bash"]]}
    return f"{CLOUD_CONFIG_HEADER}\\n{json.dumps(config)}"
