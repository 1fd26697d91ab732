"""What a Novita instance is given (name, environment, start command) and how it ends itself.

Novita runs each instance as a container from a Docker image, with environment variables (each
value at most 2048 characters) and a start command (at most 2047). The start script is longer
than that, so it travels base64-encoded in `SKYWARD_BOOT_<i>` chunks and the command only joins,
decodes and runs it (`start_command`); the guardian's source travels the same way
(`SKYWARD_GUARDIAN_<i>`). The script installs sshd, curl and python3 where the image lacks them,
installs the pool's host key as the only one and authorises the login key
(`MachineAccess.container_script`), keeps the API key for the end command (mode 600), starts the
node's guardian (`skyward.guardian.boot`), then sshd with exactly that host key, and stays up.

Novita has no tags and no instance-scoped keys: an instance is the pool's by its name,
`skyward-<pool>-<node>`, and it deletes itself through the API with the account's key
(`end_command`), which is why the key is in its environment. Stopping would not do: a stopped
instance still bills its disk.
"""

from __future__ import annotations

import base64
import shlex
from typing import TYPE_CHECKING

from skyward.providers.access import HOST_KEY_VARIABLE
from skyward.providers.naming import machine_name

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

NAME_PREFIX = "skyward-"
#: Where the start script keeps the API key for `end_command` (the login's home; mode 600).
KEY_FILE = ".skyward-novita.env"
HOME = '"${HOME:-/root}"'
BOOT_VARIABLE = "SKYWARD_BOOT"
#: Novita's limit on one environment value, with room to spare.
CHUNK = 2000

_FIND = """
import json, os, sys, urllib.parse, urllib.request
url, name = sys.argv[1].rstrip("/"), sys.argv[2]
path = os.path.join(os.path.expanduser("~"), ".skyward-novita.env")
key = dict(line.strip().split("=", 1) for line in open(path) if "=" in line)["NOVITA_API_KEY"]
def call(method, route, body=None):
    headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + route, data, headers, method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read()
    return json.loads(text) if text else None
page = call("GET", "/gpu/instances?" + urllib.parse.urlencode({"name": name, "pageSize": 100})) or {}
for row in page.get("instances") or page.get("data") or []:
    if row.get("name") == name:
        call("POST", "/gpu/instance/delete", {"instanceId": row["id"]})
"""


def instance_name(pool_id: str, node: int) -> str:
    return machine_name(pool_id, node)


def chunks(variable: str, value: str) -> dict[str, str]:
    """`value` split into `<variable>_0`, `_1`... of at most `CHUNK` characters each."""
    return {f"{variable}_{i}": value[at : at + CHUNK] for i, at in enumerate(range(0, len(value), CHUNK))}


def joined(variable: str, count: int) -> str:
    """The shell word that joins the chunks back: `"$X_0$X_1"`."""
    return '"' + "".join(f"${{{variable}_{i}}}" for i in range(count)) + '"'


def end_command(api_url: str, name: str, instance_id: str | None = None) -> str:
    """What the node's guardian runs when the pool's lease lapses: the instance deletes itself
    through Novita's API (`POST /gpu/instance/delete`) with the key the start script kept: by id
    with curl when it is known (after the first login), else found by its name (python3)."""
    q = shlex.quote
    program = base64.b64encode(_FIND.strip().encode()).decode()
    find = f"python3 -c {q(f'import base64; exec(base64.b64decode({program!r}))')} {q(api_url)} {q(name)}"
    if instance_id is None:
        return f'. "$HOME/{KEY_FILE}"; {find}'
    body = q(f'{{"instanceId": "{instance_id}"}}')
    url = q(f"{api_url.rstrip('/')}/gpu/instance/delete")
    return (
        f'. "$HOME/{KEY_FILE}"; curl -fsS -X POST -H "Authorization: Bearer $NOVITA_API_KEY" '
        f"-H 'Content-Type: application/json' -d {body} {url} || {find}"
    )


def start_script(access: MachineAccess, guardian: BootGuardian | None, guardian_chunks: int) -> str:
    """The container's whole life (run by `bash`, as root); `set -e`: an instance that cannot
    install the pool's keys must never answer SSH."""
    q = shlex.quote
    key = "/etc/ssh/ssh_host_ed25519_key"
    keep = f"(umask 077; printf 'NOVITA_API_KEY=%s\\n' \"${{NOVITA_API_KEY:-}}\" > {HOME}/{KEY_FILE})"
    boot = []
    if guardian is not None:
        source = f"SKYWARD_GUARDIAN={joined('SKYWARD_GUARDIAN', guardian_chunks)}; export SKYWARD_GUARDIAN; "
        boot = [source + guardian.command(home=HOME)]
    return "\n".join([
        "set -e",
        f'test -n "${HOST_KEY_VARIABLE}" || {{ echo "{HOST_KEY_VARIABLE} is not set" >&2; exit 1; }}',
        'export PATH="$PATH:/usr/sbin:/usr/local/sbin"',
        "missing=''; for t in sshd:openssh-server curl:curl python3:python3; do",
        '  command -v "${t%%:*}" >/dev/null 2>&1 || missing="$missing ${t#*:}"; done',
        'if [ -n "$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive '
        "apt-get install -y -qq $missing; fi",
        access.container_script(ssh_dir="/etc/ssh", home="/root"),
        keep,
        *boot,
        "mkdir -p /run/sshd 2>/dev/null || true",
        f'"$(command -v sshd)" -h {q(key)}',
        "exec sleep infinity",
    ])


def environment(
    access: MachineAccess, api_key: str, pool_id: str, script: str, guardian_source: str
) -> dict[str, str]:
    """The instance's environment: keys, pool, API key, and the chunked script and guardian."""
    return {
        HOST_KEY_VARIABLE: access.host_key_b64,
        "PUBLIC_KEY": access.login_key,
        "SKYWARD_POOL": pool_id,
        "NOVITA_API_KEY": api_key,
        **chunks(BOOT_VARIABLE, base64.b64encode(script.encode()).decode()),
        **chunks("SKYWARD_GUARDIAN", guardian_source),
    }


def start_command(env: dict[str, str]) -> str:
    """The container's start command: join the script's chunks, decode, run it."""
    count = sum(1 for name in env if name.startswith(f"{BOOT_VARIABLE}_"))
    return f"bash -c 'exec bash -c \"$(printf %s {joined(BOOT_VARIABLE, count)} | base64 -d)\"'"


def ssh_address(row: dict[str, object]) -> tuple[str, int] | None:
    """(host, port) of the mapping for the container's 22/tcp once Novita reports it."""
    for mapping in row.get("portMappings") or []:  # type: ignore[attr-defined]
        if isinstance(mapping, dict) and int(mapping.get("port") or 0) == 22 and mapping.get("endpoint"):
            host, _, port = str(mapping["endpoint"]).rpartition(":")
            try:
                return host, int(port)
            except ValueError:
                return None
    return None
