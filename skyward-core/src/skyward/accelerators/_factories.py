"""Factories generated from the catalog, `Custom`, and `resolve()`: where strings become objects.

Every place that accepts an accelerator (specs, `skyward.toml`, the CLI) funnels through
`resolve()`, so "A100", "a100-40gb", "A100:8" and `sky.accelerators.A100(count=8)` mean the same
thing everywhere, and a typo fails at construction with suggestions instead of at provision time.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from skyward.accelerators._model import Accelerator, Card, normalize_memory
from skyward.accelerators.catalog import CARDS
from skyward.errors import ConfigurationError

Factory = Callable[..., Accelerator]

# Words that vendors and `nvidia-smi` put around a card's name but that never distinguish two cards,
# so "NVIDIA GeForce RTX 4090" and "Tesla T4" resolve like "RTX_4090" and "T4".
_NOISE = frozenset(
    {"nvidia", "amd", "google", "aws", "amazon", "tesla", "geforce", "instinct", "generation", "gpu"}
    | {"hbm2", "hbm2e", "hbm3", "hbm3e"}
)
_SEPARATORS = re.compile(r"[\s\-_/]+")
_MEMORY_TOKEN = re.compile(r"^\d+(?:\.\d+)?(?:g|gb|gib)$")
_FORM_TOKEN = re.compile(r"^(sxm\d*|pcie|nvl)$")
# "A100:8" (anything after the colon is the count, so "A100:abc" gets a clear error) or "A100 x8"
# (digits only, so "RX 7900 XTX" is not read as a count of "TX").
_COUNT_SUFFIX = re.compile(r"^(?P<name>.*?)(?::\s*(?P<count>.*)|\s+[xX×]\s*(?P<times>\d+(?:\.\d+)?))$")
_FORM_FACTORS = {"sxm": "SXM", "pcie": "PCIe", "nvl": "NVL"}


def _tokens(text: str) -> list[str]:
    return [t for t in _SEPARATORS.split(text.strip().lower()) if t and t not in _NOISE]


def _key(text: str) -> str:
    """The spelling-insensitive form a name is looked up by: "RTX 4090" and "rtx-4090" -> "rtx4090"."""
    return "".join(_tokens(text))


def _index(cards: tuple[Card, ...]) -> dict[str, Card]:
    index: dict[str, Card] = {}
    for card in cards:
        for spelling in (card.name, *card.aliases):
            key = _key(spelling)
            clash = index.setdefault(key, card)
            if clash is not card:  # a catalog bug; fail at import, not on some user's lookup
                raise RuntimeError(f"catalog: {spelling!r} ({card.name}) clashes with {clash.name}")
    return index


_BY_NAME: dict[str, Card] = {card.name: card for card in CARDS}
_BY_KEY: dict[str, Card] = _index(CARDS)


def names() -> tuple[str, ...]:
    """Canonical names of every catalog card, in catalog order (each is a `sky.accelerators` factory)."""
    return tuple(_BY_NAME)


def catalog() -> Mapping[str, Card]:
    """The catalog rows by canonical name, read-only: memory variants, form factors, aliases."""
    return MappingProxyType(_BY_NAME)


def _form_factor(card: Card, value: str | None) -> str | None:
    if value is None:
        return None
    # "SXM4"/"SXM5" are how nvidia-smi spells SXM; the generation number adds nothing.
    spelled = re.sub(r"\d+$", "", value.strip().lower()) if isinstance(value, str) else ""
    canonical = _FORM_FACTORS.get(spelled)
    if not card.form_factors:
        raise ConfigurationError(f"{card.name} comes in a single form factor; drop form_factor={value!r}.")
    if canonical not in card.form_factors:
        raise ConfigurationError(
            f"{card.name} has no form factor {value!r}; choose one of: {', '.join(card.form_factors)}."
        )
    return canonical


def _memory(card: Card, value: Any, form_factor: str | None) -> str:
    if value is None:
        return card.memory_for(form_factor)
    try:
        memory = normalize_memory(value)
    except ConfigurationError:
        memory = None
    if memory not in card.memory:
        raise ConfigurationError(
            f"{card.name} has no {value!r} variant; choose memory from: {', '.join(card.memory)}."
        )
    return memory


def build(card: Card, *, count: float = 1, memory: Any = None, form_factor: str | None = None) -> Accelerator:
    """An `Accelerator` for a catalog card, with memory and form factor checked against the card."""
    form = _form_factor(card, form_factor)
    return Accelerator(
        name=card.name,
        memory=_memory(card, memory, form),
        count=count,
        form_factor=form,
        manufacturer=card.manufacturer,
    )


def _signature(card: Card) -> inspect.Signature:
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("count", kw, default=1, annotation=float)]
    if len(card.memory) > 1:
        # Literal of runtime values, spelled as a call so checkers don't read it as a type expression.
        memory: Any = Literal.__getitem__(card.memory)
        # With form-factor-specific sizes (H100 NVL) the default depends on form_factor, so say None.
        default = None if card.form_factor_memory else card.default_memory
        params.append(
            inspect.Parameter("memory", kw, default=default, annotation=memory if default else memory | None)
        )
    if card.form_factors:
        form: Any = Literal.__getitem__(card.form_factors)
        params.append(inspect.Parameter("form_factor", kw, default=None, annotation=form | None))
    return inspect.Signature(params, return_annotation=Accelerator)


def _docstring(card: Card) -> str:
    lines = [f"{card.name} ({card.manufacturer}): {card.summary}.", ""]
    lines.append(
        f"Memory per card: {card.default_memory} by default"
        + (f"; also {', '.join(card.memory[1:])}." if len(card.memory) > 1 else ".")
    )
    for form, memory in card.form_factor_memory:
        lines.append(f"form_factor={form!r} defaults to {memory}.")
    if card.form_factors:
        lines.append(f"Form factors: {', '.join(card.form_factors)} (None accepts any).")
    if card.aliases:
        lines.append(f"Also resolves from: {', '.join(repr(a) for a in card.aliases)}.")
    lines += ["", f'Same as resolve("{card.name}"); count is cards per node and may be fractional.']
    return "\n".join(lines)


def _factory(card: Card) -> Factory:
    signature = _signature(card)
    accepted = frozenset(signature.parameters) - {"count"}

    def factory(*, count: float = 1, **options: Any) -> Accelerator:
        unexpected = sorted(options.keys() - accepted)
        if unexpected:  # mirror Python's own message, since the signature is synthetic
            raise TypeError(f"{card.name}() got an unexpected keyword argument {unexpected[0]!r}")
        return build(card, count=count, **options)

    factory.__name__ = factory.__qualname__ = card.name
    factory.__module__ = "skyward.accelerators"
    factory.__doc__ = _docstring(card)
    factory.__signature__ = signature  # type: ignore[attr-defined]
    return factory


FACTORIES: dict[str, Factory] = {card.name: _factory(card) for card in CARDS}


def Custom(  # noqa: N802 - reads like the other factories
    name: str, *, memory: str | None = None, count: float = 1, form_factor: str | None = None
) -> Accelerator:
    """A card outside the catalog, taken at its word: the name is matched verbatim against offers.

    Use it for new or niche hardware rather than waiting for a catalog row.
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"Custom accelerator needs a name, got {name!r}.")
    return Accelerator(
        name=name.strip(), memory=memory, count=count, form_factor=form_factor, manufacturer="custom"
    )


def _parse_count(value: str, text: str) -> float:
    try:
        count = float(text)
    except ValueError:
        raise ConfigurationError(
            f"Accelerator {value!r} has count {text!r}; write a number, e.g. 'A100:8'."
        ) from None
    return int(count) if count.is_integer() else count


def _suggest(key: str) -> list[str]:
    # Canonical names first, so "A1000" suggests A100, A10 before the alias "A6000" of RTX_A6000.
    canonical = {_key(card.name): card for card in CARDS}
    close = difflib.get_close_matches(key, canonical, n=3, cutoff=0.5)
    close += difflib.get_close_matches(key, _BY_KEY.keys() - canonical.keys(), n=3, cutoff=0.6)
    return list(dict.fromkeys(_BY_KEY[k].name for k in close))[:3]


def _unknown(value: str, name: str) -> ConfigurationError:
    suggestions = _suggest(_key(name))
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else " See sky.accelerators.names()."
    return ConfigurationError(
        f"Unknown accelerator {value!r}.{hint} "
        f'Use sky.accelerators.Custom("{name.strip()}") for a card outside the catalog.'
    )


def _parse(value: str) -> Accelerator:
    name, count = value.strip(), 1.0
    match = _COUNT_SUFFIX.match(name)
    if match:
        text = match["count"] if match["count"] is not None else match["times"]
        name, count = match["name"], _parse_count(value, text.strip())
    memory: list[str] = []
    forms: list[str] = []
    rest: list[str] = []
    for token in _tokens(name):
        if _MEMORY_TOKEN.match(token):
            memory.append(token)
        elif _FORM_TOKEN.match(token):
            forms.append(token)
        else:
            rest.append(token)
    card = _BY_KEY.get("".join(rest))
    if card is None:
        raise _unknown(value, name)
    if len(memory) > 1 or len(forms) > 1:
        raise ConfigurationError(f"Accelerator {value!r} names more than one memory size or form factor.")
    return build(card, count=count, memory=next(iter(memory), None), form_factor=next(iter(forms), None))


def resolve(value: Accelerator | str | None) -> Accelerator | None:
    """Turn whatever a user wrote for `accelerator=` into an `Accelerator` (or None for CPU-only).

    Strings are case- and separator-insensitive and may carry memory, form factor and count:
    "A100", "a100-40gb", "H100-SXM", "RTX 4090", "nvidia-a100", "A100:8", "H100-SXM-80GB x8".
    Raises ConfigurationError for unknown names (with close matches), memory variants the card does
    not come in, and non-positive counts.
    """
    if value is None or isinstance(value, Accelerator):
        return value
    if not isinstance(value, str):
        raise ConfigurationError(
            f"accelerator must be a name like 'A100' or sky.accelerators.A100(), got {type(value).__name__}: "
            f"{value!r}."
        )
    if not value.strip():
        raise ConfigurationError("accelerator is an empty string; leave it None for CPU-only nodes.")
    return _parse(value)
