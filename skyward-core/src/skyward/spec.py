"""What to provision: ``Spec`` (one hardware request), ``Nodes`` (how many), ``Volume`` (mounted buckets).

A ``Spec`` is checked completely when it is built, so a typo fails on the line that made it and
not minutes later on a half-provisioned cluster. Natural input is accepted and normalised once
here (``nodes=4``, ``nodes=(2, 8)``, ``accelerator="A100"``, ``volumes=[...]``,
``allocation="always-spot"``) so every consumer downstream sees one shape.

Specs are shipped with cloudpickle, so they hold plain values plus the provider config and the
plugins the user passed, which are opaque here.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from skyward.dataclass_view import dataclass_view
from skyward.errors import ConfigurationError
from skyward.image import Image

if TYPE_CHECKING:
    from skyward.accelerators import Accelerator
    from skyward.extension.provider_config import ProviderConfig

__all__ = [
    "ALLOCATIONS",
    "ARCHITECTURES",
    "Allocation",
    "AllocationStrategy",
    "Architecture",
    "NodeSpec",
    "Nodes",
    "S3Volume",
    "Spec",
    "Volume",
    "normalize_nodes",
]

Allocation = Literal["spot-if-available", "spot", "on-demand", "cheapest"]
#: `Spec(allocation=...)`'s values under their public name, `sky.AllocationStrategy`, for annotating
#: code that passes one on (`_allocation` checks them; "always-spot", the older "spot", is accepted too).
AllocationStrategy = Allocation
Architecture = Literal["x86_64", "arm64"]

#: Accepted ``allocation`` values; ``"always-spot"`` is the older name of ``"spot"`` and is stored as it.
ALLOCATIONS: tuple[str, ...] = ("spot-if-available", "spot", "always-spot", "on-demand", "cheapest")
_ALLOCATION_ALIASES = {"always-spot": "spot"}

ARCHITECTURES: tuple[str, ...] = ("x86_64", "arm64")
_ARCHITECTURE_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "aarch64": "arm64", "arm": "arm64"}

#: Mount points that would hide the system or Skyward's own files on the worker: these folders
#: themselves (a folder of your own below them is fine, e.g. /opt/models or /home/me/data)...
_RESERVED_MOUNTS = ("/", "/home", "/opt", "/root", "/tmp", "/var")
#: ...and these with everything below them: the system's own trees, and Skyward's.
_RESERVED_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt/skyward", "/proc",
    "/run", "/sbin", "/sys", "/usr",
)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fmt_nodes(desired: object, min: object, max: object) -> str:  # noqa: A002 - mirrors the fields
    parts = [f"desired={desired!r}"]
    if min is not None:
        parts.append(f"min={min!r}")
    if max is not None:
        parts.append(f"max={max!r}")
    return f"Nodes({', '.join(parts)})"


@dataclass_view
@attrs.frozen
class Nodes:
    """How many nodes a pool wants, and how elastic it may be.

    ``desired`` is the target; ``min`` (partial readiness) is how many must be up before the pool
    is usable; ``max`` (autoscaling) is the ceiling. ``min`` and ``max`` are keyword-only because
    a positional ``Nodes(2, 8, 1)`` reads ambiguously (is 8 the floor or the ceiling?).
    """

    desired: int
    min: int | None = attrs.field(default=None, kw_only=True)
    max: int | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        me = _fmt_nodes(self.desired, self.min, self.max)
        for name in ("desired", "min", "max"):
            value = getattr(self, name)
            if value is not None and not _is_count(value):
                raise ConfigurationError(f"{me}: {name} must be a whole number of nodes, got {value!r}")
        if self.desired < 1:
            raise ConfigurationError(f"{me}: a pool needs at least one node; pass desired=1 or more")
        if self.min is not None:
            if self.min < 1:
                raise ConfigurationError(f"{me}: min must be at least 1; pass min=1 or leave it out")
            if self.min > self.desired:
                raise ConfigurationError(
                    f"{me}: min cannot exceed desired; lower min to at most {self.desired}"
                )
        if self.max is not None and self.max < self.desired:
            raise ConfigurationError(
                f"{me}: max cannot be below desired; raise max to at least {self.desired}"
            )

    @property
    def floor(self) -> int:
        """Nodes that must be ready before work starts (``min``, else all of ``desired``)."""
        return self.min if self.min is not None else self.desired

    @property
    def ceiling(self) -> int:
        """The most nodes the pool may grow to (``max``, else ``desired``)."""
        return self.max if self.max is not None else self.desired

    @property
    def elastic(self) -> bool:
        """Whether the autoscaler may add nodes beyond ``desired``."""
        return self.max is not None and self.max > self.desired


NodeSpec: TypeAlias = "int | tuple[int, int] | Nodes"


def normalize_nodes(value: int | tuple[int, int] | list[int] | Nodes) -> Nodes:
    """Turn every accepted ``nodes=`` form into ``Nodes``: ``4``, ``(2, 8)`` (start 2, up to 8), ``Nodes``."""
    if isinstance(value, Nodes):
        return value
    if _is_count(value):
        if value < 1:  # type: ignore[operator]
            raise ConfigurationError(f"nodes={value!r}: a pool needs at least one node; pass nodes=1 or more")
        return Nodes(value)  # type: ignore[arg-type]
    if isinstance(value, tuple | list) and len(value) == 2 and all(_is_count(v) for v in value):
        low, high = value
        if low > high:
            raise ConfigurationError(
                f"nodes={tuple(value)!r}: the range is (start, most); pass nodes=({high}, {low})"
            )
        try:
            return Nodes(low, max=high)
        except ConfigurationError as error:
            raise ConfigurationError(f"nodes={tuple(value)!r}: {error}") from None
    raise ConfigurationError(
        f"nodes={value!r}: expected a count (nodes=4), a range (nodes=(2, 8)) or sky.Nodes(desired=8, min=4)"
    )


def _mount(value: object) -> str:
    """Converter for ``Volume.mount``: an absolute path, stored normalised, that hides nothing.

    The mount point is a path on the worker, used as written by the mount command, so it is checked
    in the one spelling every consumer sees: ``/data/`` and ``/data//`` become ``/data``. A ``..``
    is refused rather than resolved (``/data/../etc`` is almost certainly not what was meant), and
    ``//root`` is not a way past the reserved list (POSIX keeps a leading ``//``, so ``normpath``
    alone would).
    """
    if not isinstance(value, str) or not value.startswith("/"):
        raise ConfigurationError(
            f'Volume(mount={value!r}): the mount point must be an absolute path; pass e.g. mount="/data"'
        )
    if any(ord(ch) < 32 for ch in value):
        raise ConfigurationError(
            f"Volume(mount={value!r}): the mount point contains a control character (a newline or a "
            'tab?); pass a plain path, e.g. mount="/data"'
        )
    if ".." in value.split("/"):
        raise ConfigurationError(
            f"Volume(mount={value!r}): a mount point cannot go up with '..'; write the folder it means, "
            'e.g. mount="/data"'
        )
    path = "/" + posixpath.normpath(value).lstrip("/")
    inside_tree = any(path == tree or path.startswith(tree + "/") for tree in _RESERVED_TREES)
    if path in _RESERVED_MOUNTS or inside_tree:
        raise ConfigurationError(
            f"Volume(mount={value!r}): {path} is reserved on workers (system or Skyward files would be "
            'hidden); mount somewhere of your own, e.g. mount="/data"'
        )
    return path


def _check_bucket(instance: Volume, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value or "/" in value:
        raise ConfigurationError(
            f"Volume(bucket={value!r}): expected a bare bucket name; put any folder in prefix=, "
            'e.g. Volume(bucket="my-data", prefix="datasets/", mount="/data")'
        )


def _check_storage(instance: Volume, attribute: attrs.Attribute[object], value: object) -> None:
    from skyward.storage.client import Storage  # values layer; boto3 is not imported by this

    if value is not None and not isinstance(value, Storage):
        raise ConfigurationError(
            f"Volume(storage={value!r}): expected a sky.storage.Storage, e.g. "
            'storage=sky.storage.R2(account_id=..., access_key=..., secret_key=...), or None for the '
            "provider's own store"
        )


def _prefix(value: object) -> str:
    if not isinstance(value, str) or any(ord(ch) < 32 for ch in value) or ".." in value.split("/"):
        raise ConfigurationError(
            f'Volume(prefix={value!r}): expected a folder of the bucket, e.g. prefix="datasets/"'
        )
    return value.strip("/")


#: How a volume reaches the node: a FUSE mount, a copy (download at start, upload at exit when
#: read-write), or a mount where the node allows FUSE and a copy where it does not.
VOLUME_MODES: tuple[str, ...] = ("mount", "copy", "auto")


def _check_mode(instance: Volume, attribute: attrs.Attribute[str], value: object) -> None:
    if value not in VOLUME_MODES:
        raise ConfigurationError(
            f'Volume(mode={value!r}): expected "mount" (FUSE), "copy" (download at start, upload at '
            'exit) or "auto" (a mount where the node allows FUSE, else a copy)'
        )


@dataclass_view
@attrs.frozen
class Volume:
    """A bucket mounted as a directory on every worker (FUSE), read-only unless asked otherwise.

    ``mount`` is an absolute path, stored normalised (``/data/`` is ``/data``); it may not hide the
    system or Skyward (``/``, ``/root``, ``/home``, ``/tmp``, ``/var``, ``/opt``, ``/opt/skyward`` and
    below, ``/etc``, ``/usr``, ``/bin`` and the other system trees and what is below them).
    ``storage`` overrides the object store; ``None`` lets the provider pick its own (S3 on AWS...).
    ``mode`` is how the bucket reaches the node (``VOLUME_MODES``; see docs/storage.md).
    """

    bucket: str = attrs.field(validator=_check_bucket)
    mount: str = attrs.field(converter=_mount)
    prefix: str = attrs.field(default="", converter=_prefix)
    read_only: bool = True
    storage: object | None = attrs.field(default=None, validator=_check_storage)
    mode: str = attrs.field(default="mount", kw_only=True, validator=_check_mode)


def S3Volume(  # noqa: N802 - the older public name, kept callable like a class
    *, mount_path: str, bucket: str, prefix: str = "", read_only: bool = True
) -> Volume:
    """The older spelling of ``Volume`` (``mount_path=`` instead of ``mount=``); returns a ``Volume``."""
    return Volume(bucket=bucket, mount=mount_path, prefix=prefix, read_only=read_only)


# --- Spec converters and validators


def _provider(value: object) -> object:
    """A provider name (``"aws"``) becomes its config object through the plugin registry, and a
    provider class written without its parentheses (``provider=sky.Local``) becomes its default
    instance; anything else that is not a provider config is refused here, at construction,
    rather than deep inside the pool's start."""
    if value is None:
        return None
    if isinstance(value, str):
        from skyward.extension.registry import provider_config  # lazy: discovery loads entry points

        return provider_config(value)
    if isinstance(value, type) and callable(getattr(value, "create", None)):
        try:
            return value()
        except TypeError as exc:
            raise ConfigurationError(
                f"Spec(provider={value.__name__}): a provider class needs its settings here ({exc}); "
                f"pass an instance, e.g. provider=sky.{value.__name__}(...)"
            ) from None
    from skyward.extension.provider_config import ProviderConfig

    if not callable(getattr(value, "create", None)) or isinstance(value, type):
        raise ConfigurationError(
            f"Spec(provider={value!r}): expected a provider such as sky.Local() or sky.SSH(hosts=[...]), "
            'or its name ("local", "aws"), not a value of type ' + type(value).__name__
        )
    if not isinstance(value, ProviderConfig):
        raise ConfigurationError(
            f"Spec(provider={type(value).__name__}(...)): a provider config subclasses "
            "skyward.providers.base.ProviderConfig (it declares what Skyward asks of a provider, with "
            f"defaults): write `class {type(value).__name__}(ProviderConfig)`"
        )
    return value


def _accelerator(value: object) -> Accelerator | None:
    """Resolve names like ``"A100"`` through the catalog, so a string is an accelerator here too."""
    if value is None:
        return None
    from skyward.accelerators import resolve  # lazy: the catalog is large and optional to load

    return resolve(value)  # type: ignore[arg-type]


def _allocation(value: object) -> str:
    if value not in ALLOCATIONS:
        valid = ", ".join(repr(a) for a in ALLOCATIONS if a not in _ALLOCATION_ALIASES)
        raise ConfigurationError(f"Spec(allocation={value!r}): expected one of {valid}")
    return _ALLOCATION_ALIASES.get(value, value)  # type: ignore[arg-type]


def _architecture(value: object) -> str | None:
    if value is None:
        return None
    value = _ARCHITECTURE_ALIASES.get(value, value) if isinstance(value, str) else value
    if value not in ARCHITECTURES:
        raise ConfigurationError(
            f'Spec(architecture={value!r}): expected "x86_64", "arm64" or None (either is fine)'
        )
    return value  # type: ignore[return-value]


def _ttl(value: object) -> int:
    """Whole seconds; ``sky.time.minutes(10)`` gives a float, so round up rather than reject it."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigurationError(
            f"Spec(ttl={value!r}): ttl is seconds of grace before idle machines shut themselves down; "
            "pass ttl=600, or ttl=0 to disable the grace period"
        )
    return math.ceil(value)


def _volumes(value: Volume | Iterable[Volume] | None) -> tuple[Volume, ...]:
    if value is None:
        return ()
    volumes = (value,) if isinstance(value, Volume) else tuple(value)
    mounts: set[str] = set()
    for volume in volumes:
        if not isinstance(volume, Volume):
            raise ConfigurationError(
                f"Spec(volumes=...): {volume!r} is not a Volume; pass "
                'sky.Volume(bucket="my-data", mount="/data")'
            )
        mount = posixpath.normpath(volume.mount)
        if mount in mounts:
            raise ConfigurationError(
                f"Spec(volumes=...): two volumes mount at {mount}; give each its own mount path"
            )
        mounts.add(mount)
    return volumes


def _check_volume_stores(spec: Spec, attribute: attrs.Attribute[tuple[Volume, ...]], volumes: object) -> None:
    """A volume without ``storage=`` needs a provider with a store of its own (``volume_storage``,
    as AWS's S3); a provider that mounts nothing (``mounts_volumes = False``: ``Local``) is exempt."""
    provider = spec.provider
    if provider is None or not provider.mounts_volumes or provider.has_volume_storage:
        return
    for volume in volumes:  # type: ignore[attr-defined]
        if volume.storage is None:
            name = provider.name
            raise ConfigurationError(
                f"Volume(bucket={volume.bucket!r}, mount={volume.mount!r}): {name} has no object store of "
                "its own; pass storage=, e.g. storage=sky.storage.R2(account_id=..., access_key=..., "
                'secret_key=...) or sky.storage.S3(region="us-east-1")'
            )


def _plugins(value: object) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(value)
    return (value,)


def _positive(kind: Any, example: str) -> Any:
    """Validator for optional quantities that must be above zero when given."""

    def check(instance: Spec, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:  # type: ignore[operator]
            raise ConfigurationError(
                f"Spec({attribute.name}={value!r}): must be a positive number or None; "
                f"pass e.g. {attribute.name}={example}"
            )

    return check


def _provider_nodes(provider: ProviderConfig | None) -> int:
    """How many nodes a spec has when ``nodes=`` is not given: one, or what the provider offers
    (``sky.SSH(hosts=[a, b])`` means two)."""
    return (provider.default_nodes if provider is not None else None) or 1


def _check_provider_nodes(provider: ProviderConfig | None, nodes: Nodes) -> None:
    """Let a provider with a fixed set of machines refuse more nodes than it has (raises)."""
    if provider is not None:
        provider.check_nodes(nodes)


def _check_image(instance: Spec, attribute: attrs.Attribute[Image], value: object) -> None:
    if not isinstance(value, Image):
        raise ConfigurationError(
            f'Spec(image={value!r}): expected a sky.Image; pass e.g. image=sky.Image(pip=["torch"])'
        )


def _check_region(instance: Spec, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigurationError(
            f'Spec(region={value!r}): expected a region name such as "us-east-1" or None'
        )


@dataclass_view
@attrs.frozen(kw_only=True)
class Spec:
    """One hardware request: where (provider, region), what (accelerator, sizes), how many, how paid.

    ``provider=None`` means the embedded ``Local`` provider (worker processes on this machine), so
    ``sky.Compute()`` works with nothing installed. The spec keeps ``None``: it is a value, below
    every provider, and ``skyward.resolve`` (what ``sky.Compute`` and ``sky.plan`` call) puts in
    ``Local()``, so everything that provisions finds a provider here. A provider name
    (``provider="aws"``) is looked up in the plugin registry when the spec is built.
    """

    provider: object | None = attrs.field(default=None, converter=_provider)
    accelerator: Accelerator | None = attrs.field(default=None, converter=_accelerator)
    nodes: Nodes = attrs.field(
        default=attrs.Factory(lambda spec: _provider_nodes(spec.provider), takes_self=True),
        converter=normalize_nodes,
        validator=lambda spec, _, nodes: _check_provider_nodes(spec.provider, nodes),
    )
    vcpus: float | None = attrs.field(default=None, validator=_positive(int | float, "8"))
    memory_gb: float | None = attrs.field(default=None, validator=_positive(int | float, "32"))
    disk_gb: int | None = attrs.field(default=None, validator=_positive(int, "100"))
    architecture: Architecture | None = attrs.field(default=None, converter=_architecture)
    allocation: Allocation = attrs.field(default="spot-if-available", converter=_allocation)
    image: Image = attrs.field(factory=Image, validator=_check_image)
    region: str | None = attrs.field(default=None, validator=_check_region)
    max_hourly_cost: float | None = attrs.field(default=None, validator=_positive(int | float, "2.5"))
    ttl: int = attrs.field(default=600, converter=_ttl)
    volumes: tuple[Volume, ...] = attrs.field(default=(), converter=_volumes, validator=_check_volume_stores)
    plugins: tuple[Any, ...] = attrs.field(default=(), converter=_plugins)

    def is_default(self, name: str) -> bool:
        """Whether field ``name`` holds what a ``Spec`` built without it would hold.

        This is what "the spec does not set it" means where keywords given beside specs fill them
        in (``Compute(Spec(...), Spec(...), image=...)``). A ``Spec`` is a value, so
        ``Spec(ttl=600)`` and ``Spec()`` are the same spec, and nothing downstream could (or
        should) tell them apart: a field set to its default value takes a shared keyword too. The
        default of ``nodes`` follows the spec's provider (``sky.SSH(hosts=[a, b])``: two).
        """
        field = attrs.fields_dict(Spec)[name]
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory(self) if default.takes_self else default.factory()
        if field.converter is not None:
            default = field.converter(default)  # type: ignore[call-arg]
        return bool(getattr(self, name) == default)
