"""The two value types behind `sky.accelerators`: what a spec asks for, and what the catalog knows.

`Accelerator` is what travels through specs, offers and the handshake, so it is frozen, hashable and
validates itself: a bad count or memory string fails where it is written, not at provision time.
`Card` is one row of the catalog; it never leaves this package except through `catalog()`.
"""

from __future__ import annotations

import math
import re
from typing import Any

import attrs

from skyward.errors import ConfigurationError
from skyward.task.instance import AcceleratorInfo

_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:g|gb|gib)?\s*$", re.IGNORECASE)


def normalize_memory(value: Any) -> str | None:
    """Spell memory one way ("80GB") so "80gb", "80 GB", "80G" and 80 compare equal."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigurationError(f"Accelerator memory must be a size like '80GB', got {value!r}.")
    if isinstance(value, int | float):
        text = f"{value:g}"
    elif isinstance(value, str):
        text = value
    else:
        raise ConfigurationError(f"Accelerator memory must be a size like '80GB', got {value!r}.")
    match = _MEMORY.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise ConfigurationError(f"Accelerator memory must be a size like '80GB', got {value!r}.")
    return f"{float(match.group(1)):g}GB"


def _check_count(_instance: object, _attribute: object, value: Any) -> None:
    # bool is an int; `count=True` is a typo, not "one".
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"Accelerator count must be a positive number, got {value!r}.")
    if not (value > 0 and math.isfinite(value)):
        raise ConfigurationError(
            f"Accelerator count must be a positive, finite number, got {value!r}. "
            "Leave accelerator=None for CPU-only nodes."
        )


def _check_name(_instance: object, _attribute: object, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"Accelerator name must be a non-empty string, got {value!r}.")


@attrs.frozen
class Accelerator:
    """Accelerators a node should carry: which card, how much memory each, how many.

    Build one with a factory (`sky.accelerators.A100(count=8)`) or `resolve("A100:8")`; the
    constructor is public for providers that read offers back, but it does not consult the catalog.
    `count` may be fractional (0.5) for providers that sell shares of a card.
    """

    name: str = attrs.field(validator=_check_name)
    memory: str | None = attrs.field(default=None, converter=normalize_memory)
    count: float = attrs.field(default=1, validator=_check_count)
    form_factor: str | None = None
    manufacturer: str = "custom"

    @property
    def memory_gb(self) -> float | None:
        """Memory per card in GB, for offer filtering and `InstanceInfo`."""
        return None if self.memory is None else float(self.memory.removesuffix("GB"))

    @property
    def is_trainium(self) -> bool:
        """Trainium nodes run through the Neuron SDK, so plugins must not assume CUDA."""
        return self.manufacturer == "AWS" and self.name.startswith("Trainium")

    def to_info(self) -> AcceleratorInfo:
        """What the worker reports through `sky.instance_info().accelerator`."""
        return AcceleratorInfo(
            type=self.name, count=self.count, memory_gb=self.memory_gb, is_trainium=self.is_trainium
        )

    def __str__(self) -> str:
        # Shaped so `resolve(str(acc)) == acc` for every catalog card.
        label = "-".join(part for part in (self.name, self.form_factor, self.memory) if part)
        return label if self.count == 1 else f"{label} x{self.count:g}"


@attrs.frozen
class Card:
    """One catalog row: a card's canonical name, maker, memory variants and form factors.

    `memory[0]` is what the factory picks when none is given, unless `form_factor_memory` says the
    requested form factor ships with a different size (H100 NVL has 94GB, not 80GB).
    """

    name: str
    manufacturer: str
    memory: tuple[str, ...]
    summary: str
    form_factors: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    form_factor_memory: tuple[tuple[str, str], ...] = ()

    @property
    def default_memory(self) -> str:
        return self.memory[0]

    def memory_for(self, form_factor: str | None) -> str:
        """The memory a factory picks when the caller names a form factor but no memory."""
        return dict(self.form_factor_memory).get(form_factor or "", self.default_memory)
