"""What a Verda VM is given at deploy time and how it ends itself: hostname, startup script, end command.

Verda deploys VMs from an OS image, with SSH keys registered on the account and an optional
startup script it runs as root at first boot. Each node gets its own script (`startup_script`):
install the pool's host key as the only one and authorise the login key
(`MachineAccess.container_script`, the key read from the script's own `SKYWARD_SSH_HOST_KEY`),
restart sshd so it presents that key, keep the account's client credentials for the end command
(mode 600, root's home), and start the node's guardian (`skyward.guardian.boot`) with an initial
lease, so a VM whose client died before its first login still deletes itself. The image's sshd
answers with a key of its own until the script ran: the provider waits for ours
(`skyward.providers.probe`), never trusting another.

Verda has no tags and no instance-scoped credentials: a VM is the pool's by its hostname,
`skyward-<pool>-<node>`, and it deletes itself through the API (`end_command`) by that hostname
with the account's credentials, which is why they are on the machine. Powering off would not do: a
shut-down Verda instance is still billed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyward.providers import vm_boot
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess
    from skyward_verda.account import ClientCredentials

#: Verda has no tags: a VM belongs to a pool by its hostname, `skyward-<pool>-<node>`.
NAME_PREFIX = "skyward-"
#: Where the startup script keeps the account's credentials for `end_command` (root's home).
CREDENTIALS_FILE = ".skyward-verda.env"

_END = """
import json, os, sys, urllib.request
url, host = sys.argv[1].rstrip("/"), sys.argv[2]
path = os.path.join(os.path.expanduser("~"), ".skyward-verda.env")
env = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
def call(method, route, body=None, token=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + route, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read()
    try:
        return json.loads(text or b"null")
    except ValueError:
        return None
login = {"grant_type": "client_credentials", "client_id": env["VERDA_CLIENT_ID"],
         "client_secret": env["VERDA_CLIENT_SECRET"]}
token = call("POST", "/oauth2/token", login)["access_token"]
ids = [i["id"] for i in call("GET", "/instances", token=token) or [] if i.get("hostname") == host]
if ids:
    call("PUT", "/instances", {"id": ids, "action": "delete"}, token)
"""


def hostname(pool_id: str, node: int) -> str:
    """Verda keeps hostnames in lower case: a pool id is (`naming.new_pool_id`)."""
    return machine_name(pool_id, node).lower()


def end_command(api_url: str, host: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the VM deletes itself through
    Verda's API (`PUT /instances`, action delete), found by its hostname, with the credentials
    the startup script kept (`skyward.providers.vm_boot.end_command`)."""
    return vm_boot.end_command(_END, api_url, host)


def startup_script(
    access: MachineAccess, credentials: ClientCredentials, guardian: BootGuardian | None = None
) -> str:
    """The node's startup script (`skyward.providers.vm_boot.startup_script`), keeping the
    account's client credentials for the end command."""
    secrets = {"VERDA_CLIENT_ID": credentials.client_id, "VERDA_CLIENT_SECRET": credentials.client_secret}
    return vm_boot.startup_script(access, secrets=secrets, secrets_file=CREDENTIALS_FILE, guardian=guardian)
