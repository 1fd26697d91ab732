"""`dataclasses.replace`, `fields` and `asdict` on Skyward's public attrs value objects.

Plugin code treats `Image`, `Spec`, `Plugin`, `Options`... as frozen dataclasses, building a changed
image with `dataclasses.replace(image, pip=(*image.pip, "lib"))` (docs/plugins.md does).
Skyward writes them as attrs classes, whose converters and validators run on every construction,
and the `dataclasses` module does not know attrs classes. `dataclass_view` gives such a class the
one thing `dataclasses` looks for, `__dataclass_fields__`, taken from a mirror class that
`dataclasses.make_dataclass` builds from the attrs fields (public API only, no private field
flags). `replace` then calls the class itself with the changed fields, so a replaced `Image` is
converted and validated exactly like one written by hand.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import attrs

T = TypeVar("T")


def dataclass_view(cls: type[T]) -> type[T]:
    """Make the attrs class `cls` readable and copyable by the `dataclasses` module (decorator,
    applied above `@attrs.frozen`)."""
    mirrored: list[tuple[str, Any, Any]] = []
    for field in attrs.fields(cls):  # type: ignore[misc]
        if field.alias != field.name:
            raise TypeError(f"{cls.__name__}.{field.name}: a field with an init alias cannot be mirrored")
        mirrored.append((field.name, field.type if field.type is not None else Any, _default(field)))
    mirror = dataclasses.make_dataclass(cls.__name__, mirrored, kw_only=True, frozen=True)
    cls.__dataclass_fields__ = mirror.__dataclass_fields__  # type: ignore[attr-defined]
    return cls


def _default(field: attrs.Attribute[Any]) -> Any:
    """The attrs field's default as a `dataclasses.field`, for `fields()` readers."""
    default = field.default
    if default is attrs.NOTHING:
        return dataclasses.field(init=field.init)
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:  # computed from the other fields: no standalone default
            return dataclasses.field(init=field.init)
        return dataclasses.field(default_factory=default.factory, init=field.init)
    if type(default).__hash__ is None:  # dataclasses refuses a mutable default as such
        return dataclasses.field(default_factory=lambda: default, init=field.init)
    return dataclasses.field(default=default, init=field.init)
