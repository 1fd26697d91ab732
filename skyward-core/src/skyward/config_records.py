"""``skyward.toml`` tables -> the ``Spec`` / ``Options`` records the Python API builds, with cattrs.

``skyward.config`` finds and reads the files and lays the tables over each other; this module turns
one finished table into records. One cattrs converter walks it: it refuses keys a record does not
have (``forbid_extra_keys``), builds the nested records (image, nodes, volumes, options, worker,
logging), resolves a provider ``type`` through ``skyward.extension.registry.provider_class`` and a plugin
name through ``skyward.extension.registry.plugin_factory``, and collects, for any failure, the path of keys
that led to it. Values themselves are passed as they are to the attrs classes, whose converters and
validators already turn "A100" into an accelerator or refuse ``nodes = 0`` with an error naming the
fix; a second, weaker copy of those rules here would drift from them.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
from collections.abc import Callable, Mapping
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

__all__ = ["CONFIG_FILENAME", "build_pool", "build_provider"]

CONFIG_FILENAME = "skyward.toml"

_TOML_ONLY_KEYS = ("options",)


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
    from skyward.extension.registry import provider_class  # lazy: discovery loads entry points

    cls = provider_class(kind)
    _check_arguments(cls, table, f"{kind} provider")
    return cls(**table)


def _check_arguments(target: Callable[..., Any], arguments: Mapping[str, Any], what: str) -> None:
    """Refuse a key ``target`` does not take, suggesting the closest (instead of a TypeError)."""
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    known = [n for n, p in parameters.items() if p.kind is not inspect.Parameter.POSITIONAL_ONLY]
    for key in arguments:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"valid keys: {', '.join(known) or 'none'}"
            raise ConfigurationError(f"unknown key {key!r} for the {what}; {hint}")


def _plugins(value: object, _type: object) -> object:
    """``plugins = ["torch", { name = "joblib", version = "1.4.2" }]``: each through its factory."""
    if not isinstance(value, list):
        raise ConfigurationError(
            'plugins must be a list, e.g. plugins = ["torch", { name = "joblib", version = "1.4.2" }]'
        )
    from skyward.extension.registry import plugin_factory  # lazy: discovery loads entry points

    built = []
    for index, item in enumerate(value):
        try:
            arguments = dict(item) if isinstance(item, dict) else {"name": item}
            name = arguments.pop("name", None)
            if not isinstance(name, str):
                raise ConfigurationError(
                    'a plugin is its name or a table with one, e.g. "torch" or { name = "joblib" }'
                )
            factory = plugin_factory(name)
            target = getattr(importlib.import_module(factory.__module__), factory.__name__, factory)
            _check_arguments(target, arguments, f"{name} plugin (sky.plugins.{name})")
            built.append(factory(**arguments))
        except Exception as error:
            raise _Within(f"[{index}]", error) from None
    return tuple(built)


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
        plugins=_plugins,
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


def build_provider(table: Mapping[str, Any]) -> Any:
    """The provider config of a ``{ type = "aws", region = ... }`` table (a ``[providers.NAME]``)."""
    return _provider(dict(table), None)


def build_pool(table: dict[str, Any], where: str) -> tuple[Spec, Options]:
    """The spec and options of one finished pool table; errors start with ``where`` and the key path."""
    fields = dict(table)
    options = fields.pop("options", {})
    spec = _structure(fields, Spec, where, None)
    return spec, _structure(options, Options, where, "options")
