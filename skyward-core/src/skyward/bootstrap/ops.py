"""One step of a node's bootstrap: a named phase with the bash that performs it.

Plugins return Ops (or plain strings, which become an Op named after the plugin) from their
`bootstrap` hook; the renderer appends them after the image phases in plugin order. `secrets`
lists values that must never appear in events or logs (the renderer masks them in output).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs


@attrs.frozen
class Op:
    name: str
    script: str
    secrets: tuple[str, ...] = attrs.field(default=(), converter=tuple, repr=False)

    def __str__(self) -> str:
        return self.script


def as_op(value: Any, default_name: str = "plugin") -> Op:
    if isinstance(value, Op):
        return value
    if isinstance(value, str):
        return Op(name=default_name, script=value)
    raise TypeError(f"a bootstrap op is a shell string or skyward.bootstrap.Op, not {type(value).__name__}")


def as_ops(values: Iterable[Any], default_name: str = "plugin") -> tuple[Op, ...]:
    return tuple(as_op(v, default_name) for v in values)
