"""Whether a function shipped by value would pickle to the same bytes as last time.

cloudpickle ships a function defined in `__main__`, a notebook or a closure by value: its code,
its defaults, its closure cells and the globals its code names, as they are at that moment. So its
bytes were made again at every dispatch, about a quarter of a no-op's round trip over SSH (a
sequential loop of `>>`: ~80 us of ~340 us, py-spy on the client). Most such functions capture
nothing that can change without being rebound: numbers, strings, `None`, tuples of those, modules
and importable functions or classes, other functions of the script that capture the same kinds.

`captures(fn)` lists every object the pickle reads from (`CAPTURED_STATE` is cloudpickle's
`_function_getstate`), or None when any of them is mutable in place (a list, a dict, an array, a
class of the script, whose contents the pickle copies). Two lists made at two dispatches hold the
same objects (compared by identity, which cannot mistake `1` for `True` or `0.0` for `-0.0`)
exactly when nothing the function captures was rebound, and then the earlier bytes are what
cloudpickle would make again. Anything this module does not know is treated as mutable: the
function is pickled again.
"""

from __future__ import annotations

import operator
import sys
import types
import weakref
from typing import Any

import cloudpickle

#: Values that cannot change in place: the same object pickles to the same bytes.
ATOMIC = frozenset({type(None), bool, int, float, complex, str, bytes, type(Ellipsis), range})
#: The function attributes cloudpickle's `_function_getstate` copies into the pickle.
CAPTURED_STATE = ("__name__", "__qualname__", "__module__", "__doc__", "__defaults__")
#: Module attributes cloudpickle copies into a by-value function's globals (relative imports).
MODULE_ATTRIBUTES = ("__package__", "__name__", "__path__", "__file__")
#: Containers deeper or longer than this are not looked into (the function is pickled again).
MAX_DEPTH = 4
MAX_ITEMS = 64

_names: weakref.WeakKeyDictionary[types.CodeType, tuple[str, ...]] = weakref.WeakKeyDictionary()
#: Stands for a global not assigned (yet), or an empty closure cell.
_ABSENT = object()


class _Mutable(Exception):
    """Something the pickle reads could change in place: no list of captures."""


def captures(fn: types.FunctionType, by_reference: Any) -> list[Any] | None:
    """Every object `fn`'s by-value pickle is made from, in a fixed order; None if any is mutable.

    `by_reference(obj)`: whether cloudpickle ships a function or class by name (`shipping`)."""
    found: list[Any] = []
    try:
        _function(fn, found, by_reference, set(), 0)
    except _Mutable:
        return None
    return found


def same(old: list[Any], new: list[Any]) -> bool:
    """Whether two lists of captures hold the very same objects."""
    return len(old) == len(new) and all(map(operator.is_, old, new))  # no generator: a third of the time


def _function(
    fn: types.FunctionType, found: list[Any], by_reference: Any, seen: set[int], depth: int
) -> None:
    code = fn.__code__
    found.append(code)  # not the function itself: a closure made anew with the same state is the same
    if id(fn) in seen:
        return  # a recursive function names itself: its state is already listed
    seen.add(id(fn))
    # Atomic values are skipped here rather than in `_value`: most captures are, and a call each
    # was a third of the walk.
    for name in CAPTURED_STATE:
        value = getattr(fn, name, None)
        found.append(value)
        if type(value) not in ATOMIC:
            _value(value, found, by_reference, seen, depth)
    for mapping in (fn.__kwdefaults__, fn.__annotations__, fn.__dict__):
        _mapping(mapping, found, by_reference, seen, depth)
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later)
            value = _ABSENT
        found.append(value)
        if value is not _ABSENT and type(value) not in ATOMIC:
            _value(value, found, by_reference, seen, depth)
    namespace = fn.__globals__
    found.append(namespace)
    found.extend(map(namespace.get, MODULE_ATTRIBUTES))
    for name in _global_names(code):
        value = namespace.get(name, _ABSENT)  # absent: a builtin, or not assigned yet
        found.append(value)
        if value is not _ABSENT and type(value) not in ATOMIC:
            _value(value, found, by_reference, seen, depth)


def _mapping(mapping: dict[str, Any] | None, found: list[Any], by_reference: Any, seen: set[int],
             depth: int) -> None:
    if not mapping:
        found.append(None)
        return
    if len(mapping) > MAX_ITEMS:
        raise _Mutable
    for key, value in mapping.items():
        found.append(key)
        found.append(value)
        if type(value) not in ATOMIC:
            _value(value, found, by_reference, seen, depth)
    found.append(len(mapping))


def _value(value: Any, found: list[Any], by_reference: Any, seen: set[int], depth: int) -> None:
    kind = type(value)
    if kind in ATOMIC:
        return
    if depth >= MAX_DEPTH:
        raise _Mutable
    if kind is tuple or kind is frozenset:
        if len(value) > MAX_ITEMS:
            raise _Mutable
        for item in value:
            found.append(item)
            _value(item, found, by_reference, seen, depth + 1)
    elif kind is types.ModuleType:
        if value.__name__ not in sys.modules or _registered_by_value(value.__name__):
            raise _Mutable  # shipped by value: its namespace travels
        # cloudpickle lists the submodules of a captured package that are imported now.
        found.append(_modules_token())
    elif kind is types.FunctionType:
        if not by_reference(value):
            _function(value, found, by_reference, seen, depth + 1)
    elif kind is types.BuiltinFunctionType:
        owner = value.__self__
        if owner is not None and type(owner) is not types.ModuleType:
            raise _Mutable  # a bound method such as `items.append`: its object travels
    elif isinstance(value, type):
        if not by_reference(value):
            raise _Mutable  # a class of the script: its attributes can change
    else:
        raise _Mutable


_modules = [-1, object()]  # the size of sys.modules when last asked, and the object that stands for it


def _modules_token() -> object:
    """The same object for as long as the number of imported modules stays the same (compared by
    identity like the other captures, where a count above 256 would not be). One module removed
    and another imported between two dispatches would go unseen, and the submodules cloudpickle
    tells the worker to import would be those of the earlier dispatch."""
    count = len(sys.modules)
    if count != _modules[0]:
        _modules[:] = [count, object()]
    return _modules[1]


def _registered_by_value(module: str) -> bool:
    registered = cloudpickle.list_registry_pickle_by_value()
    return any(module == name or module.startswith(name + ".") for name in registered)


def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """Every name `code` and the functions nested in it may read as a global: a superset of the
    globals cloudpickle copies (attribute names too), which only costs a few more looks."""
    names = _names.get(code)
    if names is None:
        found = dict.fromkeys(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found.update(dict.fromkeys(_global_names(const)))
        names = _names[code] = tuple(found)
    return names
