"""What a JarvisLabs instance is given when it is created and how it ends itself: its name, its
startup script, its end command, and the SSH address its listing gives.

A create takes the id of a startup script uploaded to the account beforehand, which the instance
runs as root when it starts. The script is `skyward.providers.vm_boot.startup_script`: the
pool's host key as the only one, the login key for root, sshd restarted, the account's API key
kept in `/root/.skyward-jarvislabs.env` (mode 600) and the node's guardian started with an initial
lease, so an instance whose client died before its first login still destroys itself. The script
is uploaded per node, named as its instance, and deleted once the instance is handed over.

JarvisLabs has no tags and no machine-scoped credential: an instance is the pool's by its name,
`skyward-<pool>-<node>`, and destroys itself through the API (`end_command`) by that name with the
account's key, which is why the key is on the instance (docs/jarvislabs.md: the trade-off).
Pausing would not do: a paused instance still bills its disk.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from skyward.errors import ConfigurationError
from skyward.providers import vm_boot
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

NAME_PREFIX = "skyward-"
#: The longest instance name JarvisLabs takes.
NAME_LIMIT = 40
#: Where the startup script keeps the account's API key for `end_command` (root's home).
KEY_FILE = ".skyward-jarvislabs.env"

_END = """
import json, os, sys, urllib.parse, urllib.request
listing, own, name = sys.argv[1].rstrip("/"), sys.argv[2].rstrip("/"), sys.argv[3]
path = os.path.join(os.path.expanduser("~"), ".skyward-jarvislabs.env")
env = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)
headers = {"Authorization": "Bearer " + env["JL_API_KEY"], "Accept": "application/json"}
def call(method, url):
    request = urllib.request.Request(url, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")
for row in (call("GET", listing + "/users/fetch") or {}).get("instances") or []:
    if row.get("name") == name:
        route = "/templates/vm/destroy" if row.get("template") == "vm" else "/misc/destroy"
        query = urllib.parse.urlencode({"machine_id": row["machine_id"]})
        call("POST", own + route + "?" + query)
"""


def instance_name(pool_id: str, node: int) -> str:
    """Lower case, as every other name Skyward gives a machine whose cloud may fold case."""
    name = machine_name(pool_id, node).lower()
    if len(name) > NAME_LIMIT:
        raise ConfigurationError(
            f"JarvisLabs takes instance names of at most {NAME_LIMIT} characters; {name!r} is longer: "
            "give the pool a shorter name (sky.Compute(name=...))"
        )
    return name


def end_command(listing_url: str, own_url: str, name: str) -> str:
    """What the node's guardian runs when the pool's lease lapses: the instance destroys itself
    (asking its region's backend, `own_url`), found by name in the listing at `listing_url`."""
    return vm_boot.end_command(_END, listing_url, own_url, name)


def startup_script(access: MachineAccess, api_key: str, guardian: BootGuardian | None = None) -> str:
    return vm_boot.startup_script(
        access, secrets={"JL_API_KEY": api_key}, secrets_file=KEY_FILE, guardian=guardian
    )


def ssh_address(ssh_str: object) -> tuple[str, int, str] | None:
    """(host, port, user) of a listing's `ssh_str` ("ssh -p 11014 root@sshc.jarvislabs.ai");
    None while the instance has none."""
    try:
        words = shlex.split(str(ssh_str or ""))
    except ValueError:
        return None
    port = 22
    for flag, value in zip(words, words[1:], strict=False):
        if flag == "-p" and value.isdigit():
            port = int(value)
    target = next((w for w in reversed(words) if "@" in w), "")
    user, _, host = target.rpartition("@")
    return (host, port, user) if host and user else None
