"""How a task's function travels: its pickled bytes, their content key, and whether it streams.

cloudpickle ships a function either by reference (module and name, for a function the worker can
import) or by value (code, closure and the globals it uses, for `__main__`, notebooks, closures).
By-value bytes capture the globals as they are at dispatch, so they are pickled again for every
dispatch (a `map` pickles once for all its items): a global changed between two calls reaches the
second one. By-reference bytes depend only on the name, so they are computed once per function
and reused: a sequential loop of `>>` on an imported function pays nothing for it.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from typing import Any

import attrs
import cloudpickle

from skyward.function import is_generator_function
from skyward.messages import function_key, pickle_function


@attrs.frozen
class ShippedFunction:
    key: bytes  # content address: the worker caches the unpickled function under it
    data: bytes
    generator: bool


_by_reference: weakref.WeakKeyDictionary[Any, ShippedFunction] = weakref.WeakKeyDictionary()


def ship(fn: Any, name: str) -> ShippedFunction:
    """The bytes a worker needs to run `fn` (pickled now, or reused when they cannot change)."""
    try:
        shipped = _by_reference.get(fn)
    except TypeError:  # not weak-referenceable (a C function, a callable without __weakref__)
        shipped = None
    if shipped is not None and pickled_by_reference(fn):  # still: its module may since be by value
        return shipped
    data = pickle_function(fn, name)
    shipped = ShippedFunction(function_key(data), data, is_generator_function(fn))
    if pickled_by_reference(fn):
        with contextlib.suppress(TypeError):  # not weak-referenceable: pickled again next time
            _by_reference[fn] = shipped
    return shipped


def pickled_by_reference(fn: Any) -> bool:
    """Whether cloudpickle ships `fn` as module + name: the same rule cloudpickle applies.

    A function of an importable module other than `__main__`, found under its qualified name,
    and whose module was not registered with `cloudpickle.register_pickle_by_value`.
    """
    module_name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not module_name or not qualname or module_name == "__main__" or "<locals>" in qualname:
        return False
    by_value = cloudpickle.list_registry_pickle_by_value()
    if any(module_name == name or module_name.startswith(name + ".") for name in by_value):
        return False
    module = sys.modules.get(module_name)
    if module is None:
        return False
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return obj is fn
