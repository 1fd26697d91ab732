"""Named pools from ``skyward.toml``, so ``sky.Compute(name="train")`` needs no hardware in code.

The file is found through ``$SKYWARD_CONFIG`` when set, else by looking for ``skyward.toml`` in
the current directory and then each parent (like ``pyproject.toml``), so a script run from a
sub-folder of a project still finds the project's pools. Under it lies the user's own
``~/.skyward/defaults.toml`` (``$SKYWARD_HOME/defaults.toml``), which may hold ``[defaults]`` and
``[providers.NAME]`` for every project of that user; the project's file wins key by key. The shape::

    [defaults]                      # applied under every pool; a pool's own keys win
    ttl = 900
    [defaults.options]
    console = "log"

    [providers.gpu]                 # a named provider: its type and that provider's own fields
    type = "aws"                    # (left out, the type is the table's name: [providers.aws])
    region = "us-east-1"

    [pools.train]
    provider = "gpu"                # a [providers.NAME] table, else a registered provider type;
    # provider = { type = "aws", region = "us-east-1" }    (same as a [pools.train.provider] table)
    plugins = ["torch", { name = "joblib", version = "1.4.2" }]   # sky.plugins.<name>(**arguments)
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

Every other ``Spec`` field may appear in a pool table. This module finds the files and lays their
tables over each other; ``skyward.config_records`` turns a finished table into records with one
cattrs converter, refusing unknown keys and naming the key path of any failure. Merging
``[defaults]`` under a pool is per key: tables (``image``, ``options``, ``provider`` of the same
``type``...) merge key by key, while any other value set in the pool, lists included, replaces the
default. A ``provider`` table's ``type`` is looked up with ``skyward.extension.registry.provider_class`` and
its other keys are that class's arguments, so a provider from another package works as soon as
that package is installed; a plugin name goes to ``skyward.extension.registry.plugin_factory`` the same way.
The records are the ones the Python API builds, so a pool from the file equals the same pool
written in Python (``Spec`` and ``Options`` compare by value; a plugin compares equal when its
factory's values do).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from skyward.config_records import CONFIG_FILENAME, build_pool, build_provider
from skyward.errors import ConfigurationError
from skyward.home import skyward_home

if TYPE_CHECKING:
    from skyward.options import Options
    from skyward.spec import Spec

__all__ = [
    "CONFIG_ENV", "CONFIG_FILENAME", "USER_DEFAULTS_FILENAME", "SkywardConfig", "find_config",
    "load_config", "load_pool", "user_defaults_path",
]

CONFIG_ENV = "SKYWARD_CONFIG"
USER_DEFAULTS_FILENAME = "defaults.toml"
#: The top-level tables each file may hold (the user's file has no pools: they belong to projects).
_PROJECT_TABLES = ("defaults", "providers", "pools")
_USER_TABLES = ("defaults", "providers")


def user_defaults_path() -> Path:
    """The user-wide file under every project's: ``$SKYWARD_HOME/defaults.toml`` (~/.skyward)."""
    return skyward_home() / USER_DEFAULTS_FILENAME


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
    """Read the config file (``path``, else the one ``find_config`` finds) over the user's
    ``defaults.toml``; neither file is an empty config.

    Only the TOML is read here; pools are built into specs on demand by ``SkywardConfig.pool``, so
    a mistake in one pool does not stop another from being used.
    """
    found = Path(path) if path is not None else find_config()
    project = _read(found, _PROJECT_TABLES, "use [defaults], [providers.<name>] and [pools.<name>]")
    user_path = user_defaults_path()
    user = _read(user_path, _USER_TABLES, "a user's defaults.toml holds [defaults] and [providers.<name>]",
                 missing_ok=True)
    providers: dict[str, dict[str, Any]] = {}
    sources: dict[str, Path] = {}
    for origin, data in ((user_path, user), (found, project)):
        if origin is None:
            continue
        for name, table in data.get("providers", {}).items():
            # Without a type, a table adds to the user's table of that name, else names its type.
            mine = providers.get(name)
            kind = table.get("type", mine["type"] if mine is not None else name)
            named = {**table, "type": kind}
            same = mine is not None and mine["type"] == kind
            providers[name] = _merge(mine, named) if same and mine is not None else named
            sources[name] = origin
    return SkywardConfig(
        path=found,
        defaults=project.get("defaults", {}),
        pools=project.get("pools", {}),
        providers=providers,
        provider_files=sources,
        user_path=user_path if user else None,
        user_defaults=user.get("defaults", {}),
    )


def _read(
    path: Path | None, tables: tuple[str, ...], fix: str, missing_ok: bool = False
) -> dict[str, Any]:
    """The TOML of ``path``, its top-level tables checked; a missing file is ``{}`` or an error."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise ConfigurationError(
            f"{path}: no such file; create it or pass the path of your skyward.toml"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigurationError(f"{path}: not valid TOML ({error}); fix the file and retry") from None
    unknown = sorted(set(data) - set(tables))
    if unknown:
        raise ConfigurationError(f"{path}: unknown top-level table(s) {', '.join(unknown)}; {fix}")
    for table in tables:
        if not isinstance(data.get(table, {}), dict):
            raise ConfigurationError(f"{path}: {table} must be a table, e.g. [{table}]")
    for group in ("pools", "providers"):
        for name, table in data.get(group, {}).items():
            if not isinstance(table, dict):
                raise ConfigurationError(f"{path}: {group}.{name} must be a table, e.g. [{group}.{name}]")
    for name, table in data.get("providers", {}).items():
        if not isinstance(table.get("type", name), str):
            raise ConfigurationError(
                f'{path}: providers.{name}.type must be a provider name, e.g. type = "aws"'
            )
    return data


def load_pool(name: str, path: str | os.PathLike[str] | None = None) -> tuple[Spec, Options]:
    """The spec and options of ``[pools.<name>]``, with ``[defaults]`` applied under it."""
    return load_config(path).pool(name)


@attrs.frozen
class SkywardConfig:
    """The parsed files: raw tables, turned into ``Spec``/``Options`` per pool on request.

    ``defaults``, ``pools`` are the project file's; ``user_defaults`` the user's ``defaults.toml``
    ``[defaults]`` (laid under the project's); ``providers`` both files' ``[providers.NAME]``
    merged (the project's win), each with its ``type``, and ``provider_files`` where each was set.
    """

    path: Path | None
    defaults: dict[str, Any] = attrs.field(factory=dict, hash=False)
    pools: dict[str, dict[str, Any]] = attrs.field(factory=dict, hash=False)
    providers: dict[str, dict[str, Any]] = attrs.field(factory=dict, hash=False)
    provider_files: dict[str, Path] = attrs.field(factory=dict, hash=False)
    user_path: Path | None = None
    user_defaults: dict[str, Any] = attrs.field(factory=dict, hash=False)

    @property
    def pool_names(self) -> tuple[str, ...]:
        return tuple(self.pools)

    @property
    def provider_names(self) -> tuple[str, ...]:
        return tuple(self.providers)

    def provider(self, name: str) -> Any:
        """The provider config of ``[providers.<name>]``, or an error naming its file and key."""
        if name not in self.providers:
            defined = ", ".join(repr(n) for n in self.providers) or "none"
            raise ConfigurationError(
                f"no [providers.{name}] table (defined: {defined}); add one with type = \"<provider>\""
            )
        where = f"{self.provider_files[name]} [providers.{name}]"
        try:
            return build_provider(self.providers[name])
        except Exception as error:  # noqa: BLE001 - every failure becomes one error naming its table
            raise ConfigurationError(f"{where}: {error}") from None

    def table(self, name: str) -> dict[str, Any]:
        """``[pools.<name>]`` as it is built: over both files' ``[defaults]``, a named provider
        replaced by its table (``sky config show`` prints this)."""
        layers = (self.user_defaults, self.defaults, self.pools[name])
        merged: dict[str, Any] = {}
        for layer in layers:
            merged = _merge(merged, _normalize_provider(layer, self.providers))
        return merged

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
        layers = (self.user_defaults, self.defaults, self.pools[name])
        named = next((layer["provider"] for layer in reversed(layers) if "provider" in layer), None)
        if isinstance(named, str) and named in self.providers:
            self.provider(named)  # its own mistakes are reported at its own table
        try:
            return build_pool(self.table(name), where)
        except ConfigurationError as error:
            if str(error).startswith(str(self.path)):
                raise
            raise ConfigurationError(f"{where}: {error}") from None

    def problems(self) -> list[str]:
        """Every named provider and pool built, and the error of each that fails (``sky config
        validate``): one line each, naming the file, the key and the fix."""
        found: list[str] = []
        for name in self.providers:
            try:
                self.provider(name)
            except ConfigurationError as error:
                found.append(str(error))
        for name in self.pools:
            try:
                self.pool(name)
            except ConfigurationError as error:
                if str(error) not in found:
                    found.append(str(error))
        return found


def _normalize_provider(
    table: Mapping[str, Any], named: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """``provider = "gpu"`` is the ``[providers.gpu]`` table when there is one, else shorthand
    for ``provider = { type = "gpu" }``."""
    result = dict(table)
    value = result.get("provider")
    if isinstance(value, str):
        result["provider"] = dict(named[value]) if named and value in named else {"type": value}
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
