"""The bootstrap op that brings a pool's volumes to a node, and the exit script that takes them away.

The mount tool is rclone: one maintained, statically linked program, packaged by Debian and
Ubuntu (`apt-get install rclone fuse3`), that speaks to every S3-compatible store the presets
name (AWS, R2, GCS, Wasabi, B2...) with one config format, mounts with FUSE (`rclone mount`, with
a write cache so ordinary programs can write checkpoints) and also copies (`rclone copy`), which
the copy mode needs on nodes without FUSE. s3fs mounts only; geesefs and mountpoint-s3 are not in
the distributions' archives (and mountpoint-s3 cannot write to an existing file).

What the op does on the node, in its `volumes` phase (after `skyward`, before plugin ops):

1. writes the exit script `<workdir>/exit.d/50-volumes.sh` first, so that whatever it mounts is
   unmounted again, even when a later step fails (the op runs it itself when it fails; the
   provider runs every `exit.d` script when it cleans the node, `exit_command`, and the node's
   guardian runs them when the client is gone);
2. writes the credentials to `<workdir>/volumes/rclone.conf`, mode 0600 (and the op's own file is
   0600 and removed after it ran: see `phases.op_phase`);
3. checks FUSE: the device `$SKYWARD_FUSE_DEVICE` (default `/dev/fuse`) must be a character
   device this user can open. A volume with `mode="mount"` on a node without it fails the
   bootstrap, naming the host, the volume and the cause; `mode="auto"` falls back to a copy;
4. installs rclone (and fuse3 for mounts) with apt-get when missing;
5. per volume: `rclone mount remote:bucket/prefix <mount>` in its own session (pid file
   `<workdir>/volume-<i>.pid`, which the node's guardian stops with the pool's other process
   groups), `--read-only` for read-only volumes, and waits until the mount is there; or, in copy
   mode, `rclone copy` of the bucket (prefix) into `<mount>` (made read-only for read-only volumes).

The exit script unmounts each mount (waiting for rclone to finish uploading what was written),
uploads a read-write copy's files back (`rclone copy <mount> remote:...`: new and changed files),
empties the copy folders and deletes `<workdir>/volumes` with the credentials. It is idempotent.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import attrs

from skyward.bootstrap.ops import Op

__all__ = ["EXIT_DIR", "VolumePlan", "exit_command", "volumes_op"]

#: Scripts the provider runs (in name order) when it cleans a node, before removing its folder.
EXIT_DIR = "exit.d"
#: The store kinds rclone's s3 backend knows by name; any other store is "Other".
_RCLONE_PROVIDERS = {"AWS", "Cloudflare", "GCS", "Wasabi", "Other"}


@attrs.frozen
class VolumePlan:
    """One volume as the node needs it: where from, where to, how, and the keys (resolved)."""

    bucket: str
    prefix: str
    mount: str
    read_only: bool
    mode: str
    endpoint: str
    region: str
    path_style: bool
    flavor: str = "Other"
    access_key: str | None = None
    secret_key: str | None = attrs.field(default=None, repr=False)
    session_token: str | None = attrs.field(default=None, repr=False)

    @property
    def remote_path(self) -> str:
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    def describe(self) -> str:
        return f"Volume(bucket={self.bucket!r}, mount={self.mount!r})"


def _rclone_section(name: str, plan: VolumePlan) -> str:
    # rclone's AWS provider addresses buckets by host name whatever force_path_style says, so a
    # path-style store (moto, LocalStack, MinIO, Wasabi) is "Other" to it.
    known = plan.flavor in _RCLONE_PROVIDERS and not plan.path_style
    lines = [
        f"[{name}]", "type = s3", f"provider = {plan.flavor if known else 'Other'}",
        f"endpoint = {plan.endpoint}", f"region = {plan.region}",
        f"force_path_style = {'true' if plan.path_style else 'false'}", "no_check_bucket = true",
    ]
    if plan.access_key:
        lines += ["env_auth = false", f"access_key_id = {plan.access_key}"]
        lines.append(f"secret_access_key = {plan.secret_key}")
        if plan.session_token:
            lines.append(f"session_token = {plan.session_token}")
    else:
        lines.append("env_auth = true")
    return "\n".join(lines) + "\n"


def _check_value(plan: VolumePlan) -> None:
    for value in (plan.access_key, plan.secret_key, plan.session_token, plan.endpoint, plan.region):
        if value and ("\n" in value or "\r" in value):
            raise ValueError(f"{plan.describe()}: a credential or endpoint holds a line break")


_EXIT_SCRIPT = r"""# Skyward: unmount this pool's volumes, upload read-write copies, remove their credentials.
V="$W/volumes"
rc=0
# /proc/mounts also lists a mount whose rclone is gone, which `mountpoint` cannot stat.
__mounted() {
  grep -qsF " $1 fuse" /proc/mounts || { command -v mountpoint >/dev/null 2>&1 && mountpoint -q "$1"; }
}
__rclone() { env -u AWS_CA_BUNDLE rclone --config "$V/rclone.conf" "$@"; }
if [ -f "$V/volumes.list" ]; then
  while IFS=$'\t' read -r i mode access remote created mount; do
    if [ "$mode" = mount ]; then
      if __mounted "$mount"; then
        fusermount3 -u "$mount" 2>/dev/null || fusermount -u "$mount" 2>/dev/null \
          || umount "$mount" 2>/dev/null || fusermount3 -uz "$mount" 2>/dev/null \
          || umount -l "$mount" 2>/dev/null \
          || { echo "skyward: could not unmount $mount" >&2; rc=1; }
      fi
      pid=$(cat "$W/volume-$i.pid" 2>/dev/null || true)
      if [ -n "$pid" ]; then
        n=0
        while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
        kill -TERM "$pid" 2>/dev/null || true
      fi
      rm -f "$W/volume-$i.pid"
      [ "$created" = 1 ] && { rmdir "$mount" 2>/dev/null || sudo -n rmdir "$mount" 2>/dev/null; }
    else
      if [ "$access" = rw ] && [ -d "$mount" ]; then
        __rclone copy "$mount" "$remote" \
          || { echo "skyward: uploading $mount to $remote failed; its files stay there" >&2; rc=1; continue; }
      fi
      if [ -d "$mount" ]; then
        chmod -R u+w "$mount" 2>/dev/null || true
        find "$mount" -mindepth 1 -delete 2>/dev/null || true
        [ "$created" = 1 ] && { rmdir "$mount" 2>/dev/null || sudo -n rmdir "$mount" 2>/dev/null; }
      fi
    fi
    true
  done < <(tac "$V/volumes.list")
fi
rm -rf "$V"
exit "$rc"
"""

_PRELUDE = r"""W="$SKYWARD_WORKDIR"
V="$W/volumes"
FUSE="${SKYWARD_FUSE_DEVICE:-/dev/fuse}"
HOST=$(hostname 2>/dev/null || echo this-node)
mkdir -p "$V" "$W/__EXIT_DIR__"
rm -f "$W/__EXIT_DIR__/50-volumes.sh"
{ echo '#!/usr/bin/env bash'; printf 'W=%q\n' "$W"; cat <<'SKYWARD_VOLUMES_EXIT'
__EXIT_SCRIPT__SKYWARD_VOLUMES_EXIT
} > "$W/__EXIT_DIR__/50-volumes.sh"
__sky_volumes_ok=''
trap 'if [ -z "$__sky_volumes_ok" ]; then bash "$W/__EXIT_DIR__/50-volumes.sh" >&2 || true; fi' EXIT
__mounted() {
  if command -v mountpoint >/dev/null 2>&1; then mountpoint -q "$1"; else grep -qs " $1 " /proc/mounts; fi
}
__rclone() { env -u AWS_CA_BUNDLE rclone --config "$V/rclone.conf" "$@"; }
# A mount point outside the login's own folders (/data on a cloud machine's "ubuntu") is made with
# sudo and given to the login user.
__mkdir() {
  mkdir -p "$1" 2>/dev/null && return 0
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n mkdir -p "$1" && sudo -n chown "$(id -u):$(id -g)" "$1"
  else
    echo "skyward: cannot create $1 on $HOST as $(id -un) (and no sudo); mount where it may write" >&2
    return 1
  fi
}
if [ ! -e "$FUSE" ]; then fuse_missing="$FUSE does not exist (a container started without FUSE?)"
elif [ ! -c "$FUSE" ]; then fuse_missing="$FUSE is not a character device"
elif ! { : <> "$FUSE"; } 2>/dev/null; then fuse_missing="$FUSE cannot be opened by $(id -un)"
else fuse_missing=""; fi
"""

_INSTALL = r"""__need=""
command -v rclone >/dev/null 2>&1 || __need=" rclone"
if [ -n "$__mounts" ] && ! command -v fusermount3 >/dev/null 2>&1 \
    && ! command -v fusermount >/dev/null 2>&1; then
  __need="$__need fuse3"
fi
if [ -n "$__need" ]; then
  if [ "$(id -u)" -eq 0 ]; then __sudo=""; elif command -v sudo >/dev/null 2>&1; then __sudo="sudo -n"
  else echo "skyward: volumes need$__need on $HOST; install it, or log in as a user with sudo" >&2; exit 1; fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "skyward: volumes need$__need on $HOST, and it has no apt-get; install it first" >&2; exit 1
  fi
  echo "skyward: installing$__need for the volumes"
  $__sudo apt-get update -qq
  $__sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $__need
fi
"""


def _dq(text: str) -> str:
    """`text` safe inside a double-quoted shell string (a mount path may hold `$`, quotes...)."""
    for char in ("\\", '"', "$", "`"):
        text = text.replace(char, "\\" + char)
    return text


def _mode_line(index: int, plan: VolumePlan) -> str:
    """Shell that settles volume `index`'s mode on this node (mount or copy), or fails for it."""
    what = shlex.quote(plan.describe())
    if plan.mode == "copy":
        return f"__mode_{index}=copy\n"
    copying = f"skyward: {_dq(plan.describe())}: $fuse_missing; copying the bucket instead"
    fallback = f'__mode_{index}=copy; echo "{copying}"'
    fail = (
        f'echo "skyward: node $HOST cannot mount "{what}": $fuse_missing. Use a machine that allows '
        'FUSE, or pass mode=\\"copy\\" (or \\"auto\\") to the Volume to copy the bucket instead" >&2; exit 1'
    )
    return (
        f"__mode_{index}=mount\n"
        f'if [ -n "$fuse_missing" ]; then {fallback if plan.mode == "auto" else fail}; fi\n'
        f'[ "$__mode_{index}" = mount ] && __mounts=1\n'
    )


def _bring(index: int, plan: VolumePlan) -> str:
    """Shell that mounts or copies volume `index`, and lists it for the exit script."""
    m = shlex.quote(plan.mount)
    remote = shlex.quote(f"v{index}:{plan.remote_path}")
    access = "ro" if plan.read_only else "rw"
    log = f'"$V/rclone-{index}.log"'
    read_only = " --read-only" if plan.read_only else ""
    where, mount = _dq(plan.remote_path), _dq(plan.mount)
    busy = f"skyward: {_dq(plan.describe())}: {mount} on $HOST is not empty; mount into an empty folder"
    busy = f'echo "{busy}" >&2'
    return (
        f"created=0; [ -d {m} ] || {{ __mkdir {m}; created=1; }}\n"
        f"if __mounted {m} || [ -n \"$(ls -A {m} 2>/dev/null)\" ]; then {busy}; exit 1; fi\n"
        f"printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' {index} \"$__mode_{index}\" {access} {remote}"
        f' "$created" {m}'
        ' >> "$V/volumes.list"\n'
        f'if [ "$__mode_{index}" = mount ]; then\n'
        f'  echo "skyward: mounting {where} at {mount} ({access})"\n'
        f"  setsid env -u AWS_CA_BUNDLE rclone mount {remote} {m} --config \"$V/rclone.conf\""
        f' --cache-dir "$V/cache-{index}" --vfs-cache-mode writes --vfs-write-back 0s --dir-cache-time 10s'
        f"{read_only} --log-file {log} --log-level INFO < /dev/null > /dev/null 2>&1 &\n"
        f'  echo $! > "$W/volume-{index}.pid"\n'
        "  n=0\n"
        f"  until __mounted {m}; do\n"
        f'    if ! kill -0 "$(cat "$W/volume-{index}.pid")" 2>/dev/null || [ "$n" -ge 600 ]; then\n'
        f'      echo "skyward: rclone could not mount {where} at {mount} on $HOST:" >&2\n'
        f"      tail -n 20 {log} >&2 2>/dev/null || true; exit 1\n"
        "    fi\n"
        "    sleep 0.1; n=$((n + 1))\n"
        "  done\n"
        "else\n"
        f'  echo "skyward: copying {where} into {mount} ({access})"\n'
        f"  __rclone copy {remote} {m}\n"
        + (f"  chmod -R a-w {m}\n" if plan.read_only else "")
        + "fi\n"
    )


def volumes_op(plans: Sequence[VolumePlan]) -> Op:
    """The `volumes` bootstrap op for `plans` (in order); its secrets are the plans' keys."""
    for plan in plans:
        _check_value(plan)
    config = "".join(_rclone_section(f"v{i}", plan) for i, plan in enumerate(plans))
    # The exit script names the node folder itself (it runs without env.sh), written when the op runs.
    prelude = _PRELUDE.replace("__EXIT_DIR__", EXIT_DIR).replace("__EXIT_SCRIPT__", _EXIT_SCRIPT)
    script = (
        prelude
        + "rm -f \"$V/rclone.conf\"\n"
        + f"(umask 077 && cat > \"$V/rclone.conf\" <<'SKYWARD_RCLONE_CONF'\n{config}SKYWARD_RCLONE_CONF\n)\n"
        + "__mounts=''\n"
        + "".join(_mode_line(i, plan) for i, plan in enumerate(plans))
        + _INSTALL
        + "".join(_bring(i, plan) for i, plan in enumerate(plans))
        + "__sky_volumes_ok=1\n"
    )
    secrets = tuple(s for plan in plans for s in (plan.secret_key, plan.session_token) if s)
    return Op(name="volumes", script=script, secrets=secrets)


def exit_command(workdir: str) -> str:
    """The shell line that runs a node's exit scripts (`<workdir>/exit.d/*.sh`, in name order),
    which a provider runs when it cleans the node, after its workers are gone."""
    d = shlex.quote(f"{workdir}/{EXIT_DIR}")
    return f'for f in {d}/*.sh; do [ -f "$f" ] && bash "$f"; done; true'
