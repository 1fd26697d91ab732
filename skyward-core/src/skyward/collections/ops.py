"""The collections' data and what each operation does to it.

One table, used by the pool's store on the client (the truth) and by a node's eventual replicas
(a copy that may be stale), so an operation means the same on both. Keys and set members are
objects (they are hashed here); values are the pickled bytes the node sent, kept opaque, so the
client never needs the classes a task stores (a tensor on a node whose client has no torch).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any


class Cell:
    """A counter's value, boxed so that operations can change it in place."""

    __slots__ = ("value",)

    def __init__(self, value: int = 0) -> None:
        self.value = value


#: The kinds that hold data (locks and barriers are the store's `sync` module).
DATA_KINDS = ("dict", "set", "counter", "queue")


def new(kind: str) -> Any:
    """An empty collection of `kind`."""
    return {"dict": dict, "set": set, "counter": Cell, "queue": deque}[kind]()


def snapshot(kind: str, state: Any) -> Any:
    """A copy of `state` to send to a node (its eventual replica)."""
    if kind == "counter":
        return state.value
    return type(state)(state)


def replica(kind: str, copy: Any) -> Any:
    """A node's local state rebuilt from a `snapshot`."""
    return Cell(copy) if kind == "counter" else copy


def _delete(d: dict[Any, Any], key: Any) -> None:
    del d[key]  # KeyError(key) for a missing key, as a dict raises


def _pop(d: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    if key in d:
        return True, d.pop(key)
    return False, None


def _remove(s: set[Any], member: Any) -> None:
    s.remove(member)


def _add(cell: Cell, n: int) -> int:
    cell.value += n
    return cell.value


def _reset(cell: Cell, value: int) -> None:
    cell.value = value


#: (kind, operation) -> what it does to the state, and what it answers.
OPS: dict[tuple[str, str], Callable[..., Any]] = {
    ("dict", "get"): lambda d, k: (True, d[k]) if k in d else (False, None),
    ("dict", "set"): lambda d, k, v: d.__setitem__(k, v),
    ("dict", "delete"): _delete,
    ("dict", "discard"): lambda d, k: d.pop(k, None) and None,
    ("dict", "contains"): lambda d, k: k in d,
    ("dict", "pop"): _pop,
    ("dict", "setdefault"): lambda d, k, v: d.setdefault(k, v),
    ("dict", "update"): lambda d, items: d.update(items),
    ("dict", "len"): len,
    ("dict", "keys"): lambda d: list(d),
    ("dict", "values"): lambda d: list(d.values()),
    ("dict", "items"): lambda d: list(d.items()),
    ("dict", "clear"): lambda d: d.clear(),
    ("set", "add"): lambda s, m: s.add(m),
    ("set", "discard"): lambda s, m: s.discard(m),
    ("set", "remove"): _remove,
    ("set", "contains"): lambda s, m: m in s,
    ("set", "len"): len,
    ("set", "members"): lambda s: list(s),
    ("set", "clear"): lambda s: s.clear(),
    ("counter", "get"): lambda c: c.value,
    ("counter", "add"): _add,
    ("counter", "reset"): _reset,
    ("queue", "put"): lambda q, v: q.append(v),
    ("queue", "len"): len,
}

#: The operations an eventual proxy may buffer: they answer nothing the caller waits for.
BUFFERED = frozenset({
    ("counter", "add"), ("counter", "reset"),
    ("dict", "set"), ("dict", "discard"), ("dict", "update"), ("dict", "clear"),
    ("set", "add"), ("set", "discard"), ("set", "clear"),
})


def apply(kind: str, state: Any, op: str, args: tuple[Any, ...]) -> Any:
    """Apply one operation to `state`; raises what the operation raises (KeyError...)."""
    try:
        fn = OPS[kind, op]
    except KeyError:
        raise ValueError(f"{kind} collections have no operation {op!r}") from None
    return fn(state, *args)
