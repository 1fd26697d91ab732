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

Every other ``Spec`` field may appear in a pool table. One cattrs converter turns the tables into
records, refusing unknown keys and naming the key path of any failure. Merging ``[defaults]`` under a pool is
per key: tables (``image``, ``options``, ``provider`` of the same ``type``...) merge key by key,
while any other value set in the pool, lists included, replaces the default. A ``provider``
value is given, with its other keys as keyword arguments, to
``skyward.registry.provider_config(type, ...)``, so a provider from another package works as soon
as that package is installed. ``plugins`` are Python objects and stay in Python.
"""

from __future__ import annotations

import difflib
import functools
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import cattrs
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn_from_attrs, override

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


# --- building specs from tables, with a cattrs converter
#
# cattrs walks the tables: it refuses keys a record does not have (``forbid_extra_keys``), builds the
# nested records (image, nodes, volumes, options, worker, logging) and collects, for any failure,
# the path of keys that led to it. Values themselves are passed as they are to the attrs classes,
# whose converters and validators already turn "A100" into an accelerator or refuse ``nodes = 0``
# with an error naming the fix; a second, weaker copy of those rules here would drift from them.

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


def _table(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{key} must be a table, e.g. [{key}] or {key} = {{ ... }}")
    return value


def _as_is(value: object, _type: object) -> object:
    """Hand the value to the record's own converter and validators unchanged."""
    return value


Hook = Callable[[Any, Any], Any]


def _record(converter: cattrs.Converter, cls: type, key: str) -> Hook:
    """A nested record (``image``, a volume): it must be a table."""
    return lambda value, _type: converter.structure(_table(value, key), cls)


def _record_or_value(converter: cattrs.Converter, cls: type) -> Hook:
    """``logging = true`` or ``logging = { level = "DEBUG" }``: a table is a record, anything else is kept."""
    return lambda value, _type: converter.structure(value, cls) if isinstance(value, dict) else value


def _provider(value: object, _type: object) -> object:
    table = dict(_table(value, "provider"))
    kind = table.pop("type", None)
    if not isinstance(kind, str):
        raise ConfigurationError(
            'provider needs a name, e.g. provider = "aws" or provider = { type = "aws" }'
        )
    from skyward.registry import provider_config  # lazy: discovery loads entry points

    return provider_config(kind, **table)


def _nodes(converter: cattrs.Converter) -> Hook:
    """``nodes = 4``, ``nodes = [2, 8]`` (a range) or ``nodes = { desired = 8, min = 4 }``."""

    def structure(value: object, _type: object) -> object:
        if isinstance(value, dict):
            return converter.structure(value, Nodes)
        return tuple(value) if isinstance(value, list) else value

    return structure


def _volumes(converter: cattrs.Converter) -> Hook:
    def structure(value: object, _type: object) -> object:
        if not isinstance(value, list):
            return value  # Spec's own converter says what volumes must be
        volume = _record(converter, Volume, "volumes")
        volumes = []
        for index, item in enumerate(value):
            try:
                volumes.append(volume(item, Volume))
            except Exception as error:
                raise _Within(f"[{index}]", error) from None
        return tuple(volumes)

    return structure


class _Within(Exception):
    """A failure inside one step of the key path that cattrs does not track itself (a list item)."""

    def __init__(self, step: str, cause: BaseException) -> None:
        super().__init__(step, cause)
        self.step, self.cause = step, cause


def _python_only(key: str, how: str) -> Hook:
    def refuse(_value: object, _type: object) -> object:
        raise ConfigurationError(f"{key} cannot be set in {CONFIG_FILENAME}; {how}")

    return refuse


def _register(converter: cattrs.Converter, cls: type, **hooks: Hook) -> None:
    """Structure ``cls`` field by field: the named hooks where given, the value as it is elsewhere."""
    overrides = {
        field.name: override(struct_hook=hooks.get(field.name, _as_is)) for field in attrs.fields(cls)
    }
    # From the attrs fields, not the class: the records also carry a dataclass view, which cattrs
    # would read instead and lose the attrs defaults computed from other fields (Spec.nodes).
    structure = make_dict_structure_fn_from_attrs(
        list(attrs.fields(cls)), cls, converter, _cattrs_forbid_extra_keys=True, **overrides
    )
    converter.register_structure_hook(cls, structure)


@functools.cache
def _converter() -> cattrs.Converter:
    """The one converter from TOML tables to records (built on first use: it imports the catalog)."""
    from skyward.accelerators import Accelerator

    # Spec names Accelerator for type checkers only; cattrs resolves every annotation it reads.
    attrs.resolve_types(Spec, localns={"Accelerator": Accelerator})
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for record in (Nodes, Volume, Worker, LogConfig, Image):
        _register(converter, record)
    _register(
        converter, Options,
        worker=_record_or_value(converter, Worker),
        logging=_record_or_value(converter, LogConfig),
        health_checker=_python_only(
            "health_checker", "it is a Python object: set it with sky.Options in code"
        ),
    )
    _register(
        converter, Spec,
        provider=_provider,
        image=_record(converter, Image, "image"),
        nodes=_nodes(converter),
        volumes=_volumes(converter),
        plugins=_python_only(
            "plugins", "they are Python objects, so build the pool in code: "
            "sky.Compute(sky.Spec(..., plugins=[...]))",
        ),
    )
    return converter


def _failure(error: BaseException, path: tuple[str, ...]) -> tuple[tuple[str, ...], BaseException]:
    """The first real failure inside a cattrs error group, with the key path that led to it."""
    if isinstance(error, _Within):
        return _failure(error.cause, (*path, error.step))
    if isinstance(error, ClassValidationError | IterableValidationError):
        with_notes, without = error.group_exceptions()
        for inner, note in with_notes:
            step = f"[{note.index}]" if isinstance(note, IterableValidationNote) else str(note.name)
            return _failure(inner, (*path, step))
        if without:
            return _failure(without[0], path)
    return path, error


def _message(error: BaseException, known_extra: tuple[str, ...]) -> str:
    if isinstance(error, ForbiddenExtraKeysError):
        key = sorted(error.extra_fields)[0]
        known = tuple(field.name for field in attrs.fields(error.cl))
        known += known_extra if error.cl is Spec else ()
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"valid keys: {', '.join(known)}"
        return f"unknown key {key!r}; {hint}"
    return str(error)


def _structure(value: object, cls: type, where: str, key: str | None) -> Any:
    """Build ``cls`` from a table, or raise a ConfigurationError that points at the failing key."""
    try:
        return _converter().structure(_table(value, key) if key else value, cls)
    except Exception as error:  # noqa: BLE001 - every failure becomes one error naming its key path
        path, failure = _failure(error, (key,) if key else ())
        dotted = "".join(step if step.startswith("[") else f".{step}" for step in path)
        raise ConfigurationError(f"{where}{dotted}: {_message(failure, _TOML_ONLY_KEYS)}") from None


def _build(table: dict[str, Any], where: str) -> tuple[Spec, Options]:
    fields = dict(table)
    options = fields.pop("options", {})
    spec = _structure(fields, Spec, where, None)
    return spec, _structure(options, Options, where, "options")
