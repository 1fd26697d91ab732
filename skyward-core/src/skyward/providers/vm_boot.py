"""What a cloud VM runs at first boot and how it ends itself, for clouds that boot a VM from an OS
image with a startup script and have no machine-scoped credential (Verda, Massed Compute).

`startup_script` is the bash script such a cloud runs as root at first boot: install the pool's
host key as the only one and authorise the login key (`MachineAccess.container_script`, the key
read from the script's own `SKYWARD_SSH_HOST_KEY`), restart sshd so it presents that key, keep
the account's credentials for the end command (mode 600, root's home), and start the node's
guardian (`skyward.guardian.boot`) with an initial lease, so a VM whose client died before its
first login still deletes itself. `set -e`: a VM that cannot install the pool's keys must never
answer SSH with the image's.

`end_command` is what the guardian runs when the lease lapses: a Python program (standard library
only: every such image has python3) passed base64-encoded on one line, since startup scripts are
read by line, with its arguments quoted. The program is the cloud's: it reads the credentials the
script kept and deletes the VM through the cloud's API.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

from skyward.providers.access import HOST_KEY_VARIABLE

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian
    from skyward.providers.access import MachineAccess

#: The shell word for the home folder the script writes to and the guardian's login will use.
HOME = '"${HOME:-/root}"'
#: Restart sshd whatever the image calls it, so it presents the pool's host key.
RESTART_SSHD = (
    "systemctl restart ssh 2>/dev/null || systemctl restart sshd 2>/dev/null || service ssh restart || true"
)


def keep_secrets(secrets: Mapping[str, str], file: str) -> str:
    """The line that writes `NAME=value` lines to `file` in the home folder, readable by its owner
    only (the umask is set before the file exists)."""
    q = shlex.quote
    names = "".join(f"{name}=%s\\n" for name in secrets)
    values = " ".join(q(value) for value in secrets.values())
    return f"(umask 077; printf '{names}' {values} > {HOME}/{file})"


def startup_script(
    access: MachineAccess,
    *,
    secrets: Mapping[str, str],
    secrets_file: str,
    guardian: BootGuardian | None = None,
) -> str:
    """The VM's startup script (see the module): keys, sshd, the kept credentials, the guardian."""
    lines = [
        "#!/bin/bash",
        "set -e",
        f"export {HOST_KEY_VARIABLE}={shlex.quote(access.host_key_b64)}",
        access.container_script(ssh_dir="/etc/ssh", home="/root"),
        RESTART_SSHD,
        keep_secrets(secrets, secrets_file),
    ]
    if guardian is not None:
        lines.append(guardian.command(home=HOME, inline=True))
    return "\n".join(lines) + "\n"


def end_command(program: str, *args: str) -> str:
    """`python3 -c` running `program` with `args` (its `sys.argv[1:]`), on one line."""
    q = shlex.quote
    encoded = base64.b64encode(program.strip().encode()).decode()
    run = f"import base64; exec(base64.b64decode('{encoded}'))"
    return " ".join(["python3", "-c", q(run), *(q(a) for a in args)])
