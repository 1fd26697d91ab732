"""Named pools from ``skyward.toml``, so ``sky.Compute(name="train")`` needs no hardware in code.

The file is found through ``$SKYWARD_CONFIG`` when set, else by looking for ``skyward.toml`` in
the current directory and then each parent (like ``pyproject.toml``), so a script run from a
sub-folder of a project still finds the project's pools. The shape::

    [defaults]                      # applied under every pool; a pool's own keys win
    ttl = 900
    [defaults.options]
    console = "log"

    [pools.train]
    provider = "aws"                # a registered provider name; or a table with `type`:
    # provider = { type = "aws", region = "us-east-1" }    (same as a [pools.train.provider] table)
    accelerator = "A100"            # catalog name; strings are fine here and in Python
    nodes = 4                       # or [2, 8] (start 2, up to 8), or { desired = 8, min = 4 }
    allocation = "spot"
    volumes = [{ bucket = "my-data", mount = "/data" }]

    [pools.train.image]             # any sky.Image field
    pip = ["torch"]
    env = { HF_HOME = "/data/hf" }

    [pools.train.options]           # any sky.Options field
    selection = "first"
    worker = { concurrency = 4 }    # sky.Worker fields
    logging = { level = "DEBUG" }   # sky.LogConfig fields, or true / false

Every other ``Spec`` field may appear in a pool table. Merging ``[defaults]`` under a pool is
per key: tables (``image``, ``options``, ``provider`` of the same ``type``...) merge key by key,
while any other value set in the pool, lists included, replaces the default. A ``provider``
value is given, with its other keys as keyword arguments, to
``skyward.registry.provider_config(type, ...)``, so a provider from another package works as soon
as that package is installed. ``plugins`` are Python objects and stay in Python.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from skyward.errors import ConfigurationError
from skyward.image import Image
from skyward.options import LogConfig, Options, Worker
from skyward.spec import Nodes, Spec, Volume

__all__ = ["CONFIG_ENV", "CONFIG_FILENAME", "SkywardConfig", "find_config", "load_config", "load_pool"]

CONFIG_FILENAME = "skyward.toml"
CONFIG_ENV = "SKYWARD_CONFIG"


def find_config(start: Path | None = None) -> Path | None:
    """The config file in force: ``$SKYWARD_CONFIG``, else the nearest ``skyward.toml`` upwards."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigurationError(
                f"{CONFIG_ENV}={explicit}: no such file; point it at your skyward.toml or unset it"
            )
        return path
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_FILENAME
        if candidate.is_file():
            return candidate
    return None


def load_config(path: str | os.PathLike[str] | None = None) -> SkywardConfig:
    """Read the config file (``path``, else the one ``find_config`` finds; none is an empty config).

    Only the TOML is read here; pools are built into specs on demand by ``SkywardConfig.pool``, so
    a mistake in one pool does not stop another from being used.
    """
    found = Path(path) if path is not None else find_config()
    if found is None:
        return SkywardConfig(path=None)
    try:
        with open(found, "rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigurationError(
            f"{found}: no such file; create it or pass the path of your skyward.toml"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigurationError(f"{found}: not valid TOML ({error}); fix the file and retry") from None
    unknown = sorted(set(data) - {"defaults", "pools"})
    if unknown:
        raise ConfigurationError(
            f"{found}: unknown top-level table(s) {', '.join(unknown)}; use [defaults] and [pools.<name>]"
        )
    defaults, pools = data.get("defaults", {}), data.get("pools", {})
    if not isinstance(defaults, dict) or not isinstance(pools, dict):
        raise ConfigurationError(f"{found}: [defaults] and [pools.<name>] must be tables")
    for name, table in pools.items():
        if not isinstance(table, dict):
            raise ConfigurationError(f"{found}: pools.{name} must be a table, e.g. [pools.{name}]")
    return SkywardConfig(path=found, defaults=defaults, pools=pools)


def load_pool(name: str, path: str | os.PathLike[str] | None = None) -> tuple[Spec, Options]:
    """The spec and options of ``[pools.<name>]``, with ``[defaults]`` applied under it."""
    return load_config(path).pool(name)


@attrs.frozen
class SkywardConfig:
    """A parsed ``skyward.toml``: raw tables, turned into ``Spec``/``Options`` per pool on request."""

    path: Path | None
    defaults: dict[str, Any] = attrs.field(factory=dict, hash=False)
    pools: dict[str, dict[str, Any]] = attrs.field(factory=dict, hash=False)

    @property
    def pool_names(self) -> tuple[str, ...]:
        return tuple(self.pools)

    def pool(self, name: str) -> tuple[Spec, Options]:
        """Build the named pool, or say which pools exist and where they were looked for."""
        if self.path is None:
            raise ConfigurationError(
                f"Compute(name={name!r}): no {CONFIG_FILENAME} found in {Path.cwd()} or its parents; "
                f"create one with a [pools.{name}] table, or set {CONFIG_ENV} to its path"
            )
        if name not in self.pools:
            defined = ", ".join(repr(n) for n in self.pools) or "none"
            close = difflib.get_close_matches(name, list(self.pools), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; add a [pools.{name}] table"
            raise ConfigurationError(
                f"Compute(name={name!r}): no such pool in {self.path} (defined: {defined}){hint}"
            )
        where = f"{self.path} [pools.{name}]"
        table = _merge(_normalize_provider(self.defaults), _normalize_provider(self.pools[name]))
        try:
            return _build(table, where)
        except ConfigurationError as error:
            if str(error).startswith(str(self.path)):
                raise
            raise ConfigurationError(f"{where}: {error}") from None


# --- building specs from tables

_SPEC_KEYS = tuple(field.name for field in attrs.fields(Spec))
_TOML_ONLY_KEYS = ("options",)


def _normalize_provider(table: Mapping[str, Any]) -> dict[str, Any]:
    """``provider = "aws"`` is shorthand for ``provider = { type = "aws" }``."""
    result = dict(table)
    if isinstance(result.get("provider"), str):
        result["provider"] = {"type": result["provider"]}
    return result


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: tables merge key by key, anything else is replaced."""
    result = dict(base)
    for key, value in over.items():
        mine = result.get(key)
        same_provider = key != "provider" or (
            isinstance(mine, dict) and isinstance(value, dict) and mine.get("type") == value.get("type")
        )
        if isinstance(mine, dict) and isinstance(value, dict) and same_provider:
            result[key] = _merge(mine, value)
        else:
            result[key] = value
    return result


def _reject_unknown(table: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"valid keys: {', '.join(known)}"
            raise ConfigurationError(f"{where}: unknown key {key!r}; {hint}")


def _table(value: object, where: str, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: {key} must be a table, e.g. [{key}] or {key} = {{ ... }}")
    return value


def _build(table: dict[str, Any], where: str) -> tuple[Spec, Options]:
    _reject_unknown(table, _SPEC_KEYS + _TOML_ONLY_KEYS, where)
    fields = dict(table)
    options = _options(_table(fields.pop("options", {}), where, "options"), f"{where}.options")
    if "plugins" in fields:
        raise ConfigurationError(
            f"{where}: plugins cannot be set in {CONFIG_FILENAME}; they are Python objects, so build "
            "the pool in code: sky.Compute(sky.Spec(..., plugins=[...]))"
        )
    if "provider" in fields:
        fields["provider"] = _provider(_table(fields["provider"], where, "provider"), where)
    if "image" in fields:
        image = _table(fields["image"], where, "image")
        _reject_unknown(image, tuple(f.name for f in attrs.fields(Image)), f"{where}.image")
        fields["image"] = Image(**image)
    if isinstance(fields.get("nodes"), dict):
        nodes = fields["nodes"]
        _reject_unknown(nodes, ("desired", "min", "max"), f"{where}.nodes")
        fields["nodes"] = Nodes(**nodes)
    elif isinstance(fields.get("nodes"), list):
        fields["nodes"] = tuple(fields["nodes"])
    if "volumes" in fields:
        fields["volumes"] = [_volume(v, f"{where}.volumes") for v in fields["volumes"]]
    return Spec(**fields), options


def _provider(table: dict[str, Any], where: str) -> object:
    kwargs = dict(table)
    kind = kwargs.pop("type", None)
    if not isinstance(kind, str):
        raise ConfigurationError(
            f'{where}: provider needs a name, e.g. provider = "aws" or provider = {{ type = "aws" }}'
        )
    from skyward.registry import provider_config  # lazy: discovery loads entry points

    return provider_config(kind, **kwargs)


def _volume(value: object, where: str) -> Volume:
    table = _table(value, where, "volumes")
    _reject_unknown(table, ("bucket", "mount", "prefix", "read_only"), where)
    return Volume(**table)


def _options(table: dict[str, Any], where: str) -> Options:
    _reject_unknown(table, tuple(f.name for f in attrs.fields(Options)), where)
    fields = dict(table)
    if isinstance(fields.get("worker"), dict):
        _reject_unknown(fields["worker"], tuple(f.name for f in attrs.fields(Worker)), f"{where}.worker")
        fields["worker"] = Worker(**fields["worker"])
    if isinstance(fields.get("logging"), dict):
        _reject_unknown(fields["logging"], tuple(f.name for f in attrs.fields(LogConfig)), f"{where}.logging")
        fields["logging"] = LogConfig(**fields["logging"])
    if "health_checker" in fields:
        raise ConfigurationError(
            f"{where}: health_checker is a Python object; set it with sky.Options in code"
        )
    return Options(**fields)
