"""The keys a new cloud machine is given before it exists, so that the pool can log in and trust it.

`MachineAccess` makes a *host* key for the pool's machines and carries the pool's login key; the
provider hands both to each machine at creation (cloud-init user data: `cloud_config`; a
container's start command: `container_script`). The pool then pins that host key: a machine that
answers with any other key is refused, so no first connection is ever trusted blindly. The
private half is a secret: kept out of `repr`, registered for masking in logs.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from skyward.secrets import register_secret

if TYPE_CHECKING:
    from skyward.guardian.boot import BootGuardian

#: The environment variable a container's start command reads the host key from (base64).
HOST_KEY_VARIABLE = "SKYWARD_SSH_HOST_KEY"


@attrs.frozen(repr=False)
class MachineAccess:
    """The keys a new machine is given so that the pool can log in to it and trust it.

    `login_key` is the pool's public key (for `authorized_keys`); `host_key` / `host_key_public`
    the machine's SSH host key pair, made here so it is known before the machine answers. The
    private half is a secret: it is kept out of `repr` and registered for masking in logs.
    """

    login_key: str
    host_key: str
    host_key_public: str

    @classmethod
    def create(cls, login_key: str) -> MachineAccess:
        import asyncssh  # here, not at the top: `sky ls` reaches this module and never makes a key

        key = asyncssh.generate_private_key("ssh-ed25519", comment="skyward host")
        private = key.export_private_key().decode()
        access = cls(login_key, private, key.export_public_key().decode().strip())
        register_secret(access.host_key_b64)
        for line in private.splitlines():
            if len(line) > 20 and not line.startswith("-----"):
                register_secret(line)
        return access

    def __repr__(self) -> str:
        return f"MachineAccess(login_key={self.login_key!r}, host_key_public={self.host_key_public!r})"

    @property
    def host_key_b64(self) -> str:
        """The private host key in one line, for an environment variable."""
        return base64.b64encode(self.host_key.encode()).decode()

    def cloud_config(
        self, guardian: BootGuardian | None = None, user: str | None = None, commands: Sequence[str] = ()
    ) -> str:
        """cloud-init user data that installs the host key and authorises the login key.

        `ssh_keys` replaces the image's generated host keys with ours (`ssh_deletekeys`), so the
        machine can only answer with the key the pool pins. With `guardian`, `runcmd` also starts
        the node's guardian at boot (`skyward.guardian.boot`), as `user` (the login the pool
        will use, so that its first login finds and adopts it; None: root), its source inlined.
        `commands` are shell lines `runcmd` runs before it, as `user` too (a cloud whose machine
        ends itself through its API keeps the key for it there).
        """
        indented = "\n".join(f"    {line}" for line in self.host_key.strip().splitlines())
        lines = [
            "#cloud-config",
            "ssh_deletekeys: true",
            "ssh_genkeytypes: []",
            "ssh_keys:",
            "  ed25519_private: |",
            indented,
            f"  ed25519_public: {self.host_key_public}",
            "ssh_authorized_keys:",
            f"  - {self.login_key}",
        ]
        run = [*commands]
        if guardian is not None:
            run.append(guardian.command(home='"${HOME:-/root}"', inline=True))
        if run:
            lines.append("runcmd:")
        for line in run:
            argv = ["su", "-", user, "-c", line] if user else ["sh", "-c", line]
            lines.append(f"  - {json.dumps(argv)}")
        return "\n".join(lines) + "\n"

    def container_script(
        self, ssh_dir: str = "/etc/ssh", home: str = "/root", guardian: BootGuardian | None = None
    ) -> str:
        """Shell lines a container runs as root before its sshd starts: install the host key
        (from `$SKYWARD_SSH_HOST_KEY`) as the only one, and authorise the login key for root.
        With `guardian`, then start the node's guardian (`skyward.guardian.boot`; its source from
        `$SKYWARD_GUARDIAN`, which the provider sets in the container's environment)."""
        q = shlex.quote
        key = f"{ssh_dir}/ssh_host_ed25519_key"
        dot_ssh = f"{home}/.ssh"
        boot = [guardian.command(home=f'"${{HOME:-{home}}}"')] if guardian is not None else []
        return "; ".join([
            f"mkdir -p {q(ssh_dir)} {q(dot_ssh)}",
            f"rm -f {q(ssh_dir)}/ssh_host_*_key {q(ssh_dir)}/ssh_host_*_key.pub",
            f'printf %s "${HOST_KEY_VARIABLE}" | base64 -d > {q(key)}',
            f"chmod 600 {q(key)}",
            f"printf '%s\\n' {q(self.host_key_public)} > {q(key)}.pub",
            f"printf '%s\\n' {q(self.login_key)} >> {q(dot_ssh)}/authorized_keys",
            f"chmod 700 {q(dot_ssh)}",
            f"chmod 600 {q(dot_ssh)}/authorized_keys",
            *boot,
        ])
