"""`sky.Slurm(...)`: the settings of a pool that is one Slurm job (a frozen value; no I/O here).

Every field maps onto `sbatch`: `partition` -> `--partition`, `account`, `qos`, `time_limit` ->
`--time`, `constraint`, and `sbatch_args` is passed as it is. The spec's `accelerator` becomes
`--gres=gpu[:type]:count`, the type from `gres_types` (the cluster's own GRES names: `{"A100":
"a100"}`), `vcpus` -> `--cpus-per-task`, `memory_gb` -> `--mem`.

`login=None` runs every Slurm command here (a login node, or `SLURM_CONF` naming the cluster);
`login="user@login.cluster"` runs them over SSH on that login node, its host key checked against
`known_hosts` (never trusted on first use), as `sky.SSH` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from skyward.errors import ConfigurationError
from skyward.options import Options
from skyward.providers.base import ProviderConfig

if TYPE_CHECKING:
    from skyward.providers.credentials import CredentialStatus
    from skyward.spec import Spec
    from skyward_slurm.provider import SlurmProvider

_TIME = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$")


def _time_limit(value: object) -> str | None:
    """Slurm's own forms ("30", "2:00:00", "1-12:00:00") or whole minutes as a number."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigurationError(
            f"Slurm(time_limit={value!r}): write minutes (120) or Slurm's form ('2:00:00')"
        )
    if isinstance(value, int) and value > 0:
        return str(value)
    if isinstance(value, str) and _TIME.match(value.strip()):
        return value.strip()
    raise ConfigurationError(
        f"Slurm(time_limit={value!r}): write minutes (120) or Slurm's form ('2:00:00', '1-12:00:00')"
    )


def _login(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigurationError(f'Slurm(login={value!r}): write "user@login.cluster" or "user@host:port"')
    from skyward.providers.ssh import parse_host  # here: `sky` loads this module, and SSH's is heavy

    parse_host(value)  # a clear error for a malformed target
    return value


def _args(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        raise ConfigurationError(
            f"Slurm(sbatch_args={value!r}): give a list of arguments, e.g. sbatch_args=['--exclusive']"
        )
    args = tuple(value)  # type: ignore[call-overload]
    for arg in args:
        if not isinstance(arg, str) or not arg.startswith("-"):
            raise ConfigurationError(
                f"Slurm(sbatch_args=...): {arg!r} is not an sbatch option ('--exclusive')"
            )
    return args


def _gres_types(value: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k).upper(), str(v)) for k, v in dict(value or {}).items()))


def _path(value: object) -> str | None:
    return None if value is None else str(value)


@attrs.frozen
class Slurm(ProviderConfig):
    """Run a pool as one Slurm job: `nodes=N` is `sbatch --nodes=N`, node i the job's i-th node.

    `python` is an interpreter on the cluster to build the venv from (its site-packages stay
    visible: a module's CUDA build of torch); None installs the image's Python with uv. The venv
    lives in the home folder, which the cluster's nodes share: it is built once per image.
    `key_file`/`known_hosts` are for `login=`, as in `sky.SSH`.
    """

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time_limit: str | None = attrs.field(default=None, converter=_time_limit)
    constraint: str | None = None
    login: str | None = attrs.field(default=None, converter=_login)
    sbatch_args: tuple[str, ...] = attrs.field(default=(), converter=_args)
    gres_types: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_gres_types)
    python: str | None = None
    key_file: str | None = attrs.field(default=None, converter=_path)
    known_hosts: str | None = attrs.field(default=None, converter=_path)

    @property
    def name(self) -> str:
        return "slurm"

    def create(self, options: Options | None = None) -> SlurmProvider:
        from skyward_slurm.provider import SlurmProvider

        return SlurmProvider(self, options)

    def hourly_price(self, spec: Spec) -> float | None:
        """A cluster's cost is its allocation's, not a price per hour: unknown."""
        return None

    def sbatch_options(self, spec: Spec, nodes: int) -> list[str]:
        """The `sbatch` options of a job holding `nodes` nodes for `spec`."""
        opts = [f"--nodes={nodes}", "--ntasks-per-node=1"]
        named = (
            ("partition", self.partition),
            ("account", self.account),
            ("qos", self.qos),
            ("time", self.time_limit),
            ("constraint", self.constraint),
        )
        opts += [f"--{flag}={value}" for flag, value in named if value]
        gres = self.gres(spec)
        if gres:
            opts.append(f"--gres={gres}")
        if spec.vcpus:
            opts.append(f"--cpus-per-task={int(spec.vcpus)}")
        if spec.memory_gb:
            opts.append(f"--mem={int(spec.memory_gb * 1024)}M")
        return [*opts, *self.sbatch_args]

    def gres(self, spec: Spec) -> str | None:
        """`gpu[:type]:count` for the spec's accelerator (None without one)."""
        acc: Any = spec.accelerator
        if acc is None:
            return None
        count = max(1, int(acc.count))
        kind = dict(self.gres_types).get(str(acc.name).upper())
        return f"gpu:{kind}:{count}" if kind else f"gpu:{count}"

    @classmethod
    def credentials(cls, check: bool = False) -> CredentialStatus:
        """For `sky providers`: Slurm authenticates you as yourself (munge); what matters is
        whether a cluster answers here (`local_cluster`)."""
        return local_cluster("sbatch")


def local_cluster(command: str) -> CredentialStatus:
    """Whether Slurm's `command` can reach a cluster from this machine: installed, and a cluster
    configured (`$SLURM_CONF`, or the package's slurm.conf). A machine with the client tools but
    no configuration (Debian's slurm-client on a laptop) is not a cluster: `sky ls` skips it
    instead of failing on squeue's DNS lookup of a controller."""
    import os
    import shutil
    from pathlib import Path

    from skyward.providers.credentials import CredentialStatus

    if shutil.which(command) is None:
        return CredentialStatus(
            found=False, where=f"no {command} here (use Slurm(login='user@login.cluster'))"
        )
    conf = os.environ.get("SLURM_CONF") or next((str(p) for p in CONF_FILES if Path(p).is_file()), None)
    if conf is None:
        return CredentialStatus(
            found=False, where=f"{command} here but no cluster configured (set $SLURM_CONF)"
        )
    return CredentialStatus(found=True, where=f"{command} on this machine ({conf})")


#: Where Slurm's packages put the cluster's configuration when `$SLURM_CONF` is not set.
CONF_FILES = ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/usr/local/etc/slurm.conf")


def join_args(args: Iterable[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in args)
