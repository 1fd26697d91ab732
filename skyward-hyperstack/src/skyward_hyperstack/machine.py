"""What a Hyperstack VM is given at creation and how it ends itself: name, user data, end command.

Hyperstack creates VMs from an OS image with cloud-init user data. Each node's user data
(`user_data`) is `MachineAccess.cloud_config`: our host key as the VM's only one, the login key
authorised, and the node's guardian (`skyward.guardian.boot`) started at boot as the login user
with an initial lease, so a VM whose client died before its first login still deletes itself;
plus, written at the end of boot for that user only (mode 600), the API key the end command uses.

Hyperstack has no machine-scoped credential (an API key reaches the whole account, and a VM has no
identity of its own to call the API with), so a VM deletes itself (`end_command`) with the
account's API key, found by its name, `skyward-<pool>-<node>`. Stopping would not do: a stopped
Hyperstack VM still bills.
"""

from __future__ import annotations

import base64
import shlex
from typing import TYPE_CHECKING

from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

NAME_PREFIX = "skyward-"
#: Where the user data keeps the API key for `end_command` (the login user's home, mode 600).
KEY_FILE = ".skyward-hyperstack.env"
#: Labels every VM carries: Skyward's, and its pool's (for a person reading the console).
LABEL = "skyward"

_END = """
import json, os, sys, urllib.parse, urllib.request
url, name = sys.argv[1].rstrip("/"), sys.argv[2]
path = os.path.join(os.path.expanduser("~"), ".skyward-hyperstack.env")
key = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)["HYPERSTACK_API_KEY"]
def call(method, route):
    headers = {"api_key": key, "Accept": "application/json"}
    request = urllib.request.Request(url + route, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read()
    return json.loads(text) if text else None
listed = call("GET", "/core/virtual-machines?" + urllib.parse.urlencode({"search": name})) or {}
for vm in listed.get("instances") or []:
    if vm.get("name") == name:
        call("DELETE", "/core/virtual-machines/" + str(vm["id"]))
"""


def vm_name(pool_id: str, node: int) -> str:
    return machine_name(pool_id, node)


def end_command(api_url: str, name: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the VM deletes itself through
    the API (`DELETE /core/virtual-machines/{id}`), found by its name, with the API key the user
    data kept. Python's standard library only: every Hyperstack Ubuntu image has python3."""
    q = shlex.quote
    program = base64.b64encode(_END.strip().encode()).decode()
    run = f"import base64; exec(base64.b64decode('{program}'))"
    return f"python3 -c {q(run)} {q(api_url)} {q(name)}"


def user_data(access: MachineAccess, api_key: str, user: str, guardian: BootGuardian | None) -> str:
    """cloud-init user data: host key, login key, guardian (`cloud_config`) and the API key file,
    written after the login user exists (`defer`), owned by it."""
    home = "/root" if user == "root" else f"/home/{user}"
    content = f"HYPERSTACK_API_KEY={api_key}\n"
    return (
        access.cloud_config(guardian, user=user)
        + "\n".join(
            [
                "write_files:",
                f"  - path: {home}/{KEY_FILE}",
                "    permissions: '0600'",
                f"    owner: {user}:{user}",
                "    defer: true",
                "    encoding: b64",
                f"    content: {base64.b64encode(content.encode()).decode()}",
            ]
        )
        + "\n"
    )
