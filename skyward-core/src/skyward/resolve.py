"""Turn what a user passed to ``sky.Compute(...)`` into ``(specs, options)``.

``Compute`` has three calling conventions:

1. flat ``Spec`` keywords: ``Compute(provider=sky.AWS(), nodes=4)`` -> one ``Spec``;
2. positional specs: ``Compute(Spec(...), Spec(...), options=...)`` -> fallback candidates;
   ``Spec`` keywords beside them (``image=sky.Image(...)``) apply to each spec that does not set
   that field itself (see ``_share``);
3. a named pool: ``Compute(name="train")`` -> ``[pools.train]`` from ``skyward.toml``.

In every convention, ``Options`` fields may also be passed as shortcuts (``console="log"``,
``worker=sky.Worker(concurrency=4)``); they are folded into the options. A shortcut may fill in a
field that ``options=`` leaves at its default but may not contradict it. With ``name=``, the pool's
``[options]`` from the file come first, then ``options=``'s non-default fields, then shortcuts:
code overrides the file. The older ``ComputePool``
spellings are translated here too (``volume=`` -> ``volumes``, ``timeout=`` -> ``ttl``,
``display=`` -> ``console``), so the rest of Skyward sees one vocabulary.

``on_event=`` is a pool argument, not configuration: the caller (``Compute``/``ComputePool``) must
pop it from the keywords before calling ``resolve_compute_args``; it is rejected here otherwise.

The default provider is chosen here too: a spec that names none gets ``Local()`` (worker
processes on this machine), so every spec that leaves has a provider. ``Spec`` keeps ``None``
itself because it is a value that stands below every provider (see "Layers" in
docs/architecture.md).
"""

from __future__ import annotations

import difflib
from typing import Any, cast

import attrs

from skyward.errors import ConfigurationError
from skyward.options import Options
from skyward.spec import Spec

__all__ = ["resolve_compute_args", "with_provider"]

_SPEC_FIELDS = tuple(field.name for field in attrs.fields(Spec))
_OPTION_FIELDS = {field.name: field for field in attrs.fields(Options)}

#: Older ``ComputePool`` keyword -> current keyword.
_RENAMED = {"volume": "volumes", "timeout": "ttl", "display": "console"}
#: Older ``display=`` values -> ``console=`` values.
_DISPLAY = {"log": "log", "spinner": "rich", "quiet": "silent"}


def resolve_compute_args(
    *specs: object, name: str | None = None, options: Options | None = None, **kwargs: Any
) -> tuple[tuple[Spec, ...], Options]:
    """The specs to try, in order, each with its provider (``Local()`` where it names none), and the
    options for the pool; raises ``ConfigurationError``.

    With no specs, no name and no ``Spec`` keywords, the result is one default spec: a single-node
    pool on the ``Local`` provider.
    """
    if options is not None and not isinstance(options, Options):
        raise ConfigurationError(
            f"Compute(options={options!r}): expected a sky.Options; "
            'pass e.g. options=sky.Options(console="log")'
        )
    spec_kwargs, shortcuts = _split(_translate(kwargs))
    _check_positional(specs)

    if name is not None:
        if specs or spec_kwargs:
            given = ", ".join([*(["Spec objects"] if specs else []), *sorted(spec_kwargs)])
            raise ConfigurationError(
                f"Compute(name={name!r}) loads its hardware from skyward.toml and cannot be combined with "
                f"{given}; move those into [pools.{name}] or drop name="
            )
        from skyward.config import load_pool

        spec, from_file = load_pool(name)
        if options is not None:
            _check_conflicts(options, shortcuts)
            from_file = _overlay(from_file, options)
        # code overrides the file, the way command-line flags override a config file
        return (with_provider(spec),), _apply(from_file, shortcuts)

    resolved = _share(cast("tuple[Spec, ...]", specs), spec_kwargs) if specs else (Spec(**spec_kwargs),)
    if options is not None:
        _check_conflicts(options, shortcuts)
    options = options if options is not None else Options()
    return tuple(map(with_provider, resolved)), _apply(options, shortcuts)


def with_provider(spec: Spec) -> Spec:
    """``spec`` with its provider: its own, or ``Local()`` when it names none."""
    if spec.provider is not None:
        return spec
    from skyward.providers.local import Local  # lazy: `sky.Compute` with a cloud provider never needs it

    return attrs.evolve(spec, provider=Local())


def _check_positional(specs: tuple[object, ...]) -> None:
    for position, spec in enumerate(specs):
        if isinstance(spec, Spec):
            continue
        if isinstance(spec, str):
            hint = f"did you mean Compute(name={spec!r})?"
        else:
            hint = f"did you mean Compute(provider={spec!r})?"
        raise ConfigurationError(
            f"Compute() takes sky.Spec objects positionally, but argument {position + 1} is {spec!r}; {hint}"
        )


def _share(specs: tuple[Spec, ...], shared: dict[str, Any]) -> tuple[Spec, ...]:
    """``Compute(Spec(...), Spec(...), image=...)``: each ``Spec`` keyword given beside the specs
    applies to every spec that does not set that field itself (leaves it at its default, see
    ``Spec.is_default``). A spec that sets it to the same value agrees; one that sets it to another
    value is a conflict, reported with the spec and the field, since either could be what was meant.
    """
    if not shared:
        return specs
    result = []
    for position, spec in enumerate(specs, 1):
        own = {name: getattr(spec, name) for name in _SPEC_FIELDS if not spec.is_default(name)}
        fill = {key: value for key, value in shared.items() if key not in own}
        for key in shared.keys() & own.keys():
            wanted = getattr(attrs.evolve(spec, **{key: shared[key]}), key)  # converted as the spec's was
            if wanted != own[key]:
                provider = type(with_provider(spec).provider).__name__
                raise ConfigurationError(
                    f"Compute() got {key}={shared[key]!r} for every spec, but spec {position} of "
                    f"{len(specs)} (provider {provider}) sets {key}={own[key]!r}; keep one: drop {key}= "
                    f"from that sky.Spec(...) to share it, or from Compute(...) to keep each spec's own"
                )
        # Built again from what it sets, so defaults that follow a filled field (nodes follows the
        # provider) are worked out anew.
        result.append(Spec(**own, **fill) if fill else spec)
    return tuple(result)


def _translate(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Rewrite the older ``ComputePool`` keywords into current ones."""
    if "on_event" in kwargs:
        raise ConfigurationError(
            "on_event= belongs to the pool, not to its configuration; Compute must take it before "
            "resolving the arguments (this is a bug in the caller, not in your code)"
        )
    result = dict(kwargs)
    for old, new in _RENAMED.items():
        if old not in result:
            continue
        if new in result:
            raise ConfigurationError(
                f"Compute() got both {old}= and {new}=; {old}= is the older name, keep only {new}="
            )
        value = result.pop(old)
        if old == "display":
            if value not in _DISPLAY:
                valid = ", ".join(repr(v) for v in _DISPLAY)
                raise ConfigurationError(
                    f"Compute(display={value!r}): expected one of {valid}; or use console= "
                    '("rich", "minimal", "log", "silent")'
                )
            value = _DISPLAY[value]
        result[new] = value
    return result


def _split(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate ``Spec`` keywords from ``Options`` shortcuts; anything else is a typo."""
    spec_kwargs: dict[str, Any] = {}
    shortcuts: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _SPEC_FIELDS:
            spec_kwargs[key] = value
        elif key in _OPTION_FIELDS:
            shortcuts[key] = value
        else:
            known = [*_SPEC_FIELDS, *_OPTION_FIELDS, *_RENAMED, "name", "options"]
            close = difflib.get_close_matches(key, known, n=3)
            hint = (
                f"did you mean {' or '.join(f'{c}=' for c in close)}?"
                if close
                else ("see sky.Spec and sky.Options for the accepted keywords")
            )
            raise ConfigurationError(f"Compute() got an unexpected keyword {key}=; {hint}")
    return spec_kwargs, shortcuts


def _is_default(options: Options, key: str) -> bool:
    field = _OPTION_FIELDS[key]
    return bool(getattr(options, key) == field.default)


def _overlay(base: Options, explicit: Options) -> Options:
    """``explicit``'s non-default fields on top of ``base`` (options= over skyward.toml's options)."""
    changes = {key: getattr(explicit, key) for key in _OPTION_FIELDS if not _is_default(explicit, key)}
    return attrs.evolve(base, **changes)


def _check_conflicts(options: Options, shortcuts: dict[str, Any]) -> None:
    """A shortcut may fill in what ``options=`` left at its default, but not contradict it."""
    for key, value in shortcuts.items():
        current = getattr(options, key)
        if not _is_default(options, key) and current != value:
            raise ConfigurationError(
                f"Compute() got {key}={value!r}, but options= already sets {key}={current!r}; "
                f"set it in one place, e.g. options=sky.Options(..., {key}={value!r})"
            )


def _apply(options: Options, shortcuts: dict[str, Any]) -> Options:
    return attrs.evolve(options, **shortcuts) if shortcuts else options
