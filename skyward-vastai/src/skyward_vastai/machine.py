"""What a Vast container is given and how it is reached: onstart script, shutdown, SSH address.

Vast's "ssh" launch mode runs Vast's own entrypoint, which starts an sshd in any image (direct
port and proxy) and then runs our `onstart` script as root, with the instance's environment.
The script installs the pool's host key (from `$SKYWARD_SSH_HOST_KEY`) as the only one and
authorises the pool's login key (`MachineAccess.container_script`), then asks the running sshd to
reload (SIGHUP), so it answers with our key from then on. Until it does, the machine may answer
with a key of Vast's making: `skyward.providers.probe.answers_with` tells the provider to keep
waiting, never to trust it.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.cloud import MachineAccess

#: Where the onstart script keeps the instance's own id and API key (mode 600, in the login's home
#: folder) for the shutdown command: Vast puts them in the container's environment, which SSH
#: logins do not inherit.
IDENTITY_FILE = ".skyward-vast.env"
SSHD_PID_FILE = "/run/sshd.pid"
#: Vast's onstart field is limited to 4048 characters.
ONSTART_LIMIT = 4048


def onstart_script(
    access: MachineAccess,
    *,
    ssh_dir: str = "/etc/ssh",
    home: str = "/root",
    identity_file: str | None = None,
    sshd_pid_file: str = SSHD_PID_FILE,
    guardian: BootGuardian | None = None,
) -> str:
    """The instance's onstart: our host key and login key in place, the node's guardian started
    (with `guardian`, its source in `$SKYWARD_GUARDIAN`), identity saved, sshd reloaded.

    The paths are parameters only so tests can run the very same script in a sandbox.
    """
    q = shlex.quote
    identity = identity_file or f"{home}/{IDENTITY_FILE}"
    save_identity = (
        f"(umask 077; printf 'CONTAINER_ID=%s\\nCONTAINER_API_KEY=%s\\n' "
        f'"$CONTAINER_ID" "$CONTAINER_API_KEY" > {q(identity)})'
    )
    reload_sshd = f'if [ -s {q(sshd_pid_file)} ]; then kill -HUP "$(cat {q(sshd_pid_file)})" || true; fi'
    keys = access.container_script(ssh_dir=ssh_dir, home=home, guardian=guardian)
    script = "; ".join([keys, save_identity, reload_sshd])
    if len(script) > ONSTART_LIMIT:
        raise ValueError(f"the onstart script is {len(script)} characters; Vast accepts {ONSTART_LIMIT}")
    return script


def shutdown_command(api_url: str, identity_file: str | None = None) -> str:
    """What the node's guardian runs when the pool's lease lapses (its client gone past
    `Spec.ttl`; `skyward.guardian`): the instance destroys
    itself through Vast's API with its own instance-scoped key (`CONTAINER_API_KEY`), and if that
    is refused, stops itself (a stopped instance bills only its disk). `shutdown` would not do:
    a container cannot power off its host, and a stopped container is still a billed instance."""
    identity = shlex.quote(identity_file) if identity_file else f'"$HOME/{IDENTITY_FILE}"'
    url = f"{api_url.rstrip('/')}/api/v0/instances/$CONTAINER_ID/"
    auth = '-H "Authorization: Bearer $CONTAINER_API_KEY"'
    return (
        f". {identity}; "
        f'curl -fsS -X DELETE {auth} "{url}" || '
        f"curl -fsS -X PUT {auth} -H 'Content-Type: application/json' "
        f"-d '{{\"state\": \"stopped\"}}' \"{url}\""
    )


def ssh_address(row: dict[str, Any]) -> tuple[str, int] | None:
    """Where to reach the instance's sshd: the direct address, else Vast's SSH proxy, else None.

    Direct (the machine's public IP and the host port mapped to the container's 22/tcp) is one
    hop fewer, and the bootstrap and every task's traffic go over it; the proxy
    (`ssh_host:ssh_port`, e.g. ssh4.vast.ai) is the fallback for machines without open ports.
    Both forward TCP to the container's own sshd, so the pinned host key is checked either way.
    """
    mapped = (row.get("ports") or {}).get("22/tcp") or []
    public = row.get("public_ipaddr")
    if mapped and public:
        try:
            return str(public).strip(), int(mapped[0]["HostPort"])
        except (KeyError, TypeError, ValueError, IndexError):
            pass
    host, port = row.get("ssh_host"), row.get("ssh_port")
    if host and port:
        return str(host).strip(), int(port)
    return None
