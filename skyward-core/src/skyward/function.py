"""`@sky.function`, the lazy `PendingFunction`, groups, `gather`, and the dispatch operators.

Calling a decorated function runs nothing: it snapshots `(fn, args, kwargs, timeout)`. An operator
chooses the placement: `>>` one node, `@` every node, `>` a Future, `&` / `gather` a parallel
group. The right-hand side is a pool or the `sky` module (the active pool of this context).
"""

from __future__ import annotations

import functools
import inspect
import reprlib
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, Generic, TypeVar, overload

import attrs
import cloudpickle

from skyward.dataclass_view import dataclass_view
from skyward.errors import ConfigurationError, NoActivePoolError

R = TypeVar("R")


def check_timeout(timeout: float | None) -> float | None:
    if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
        raise ConfigurationError(f"timeout={timeout!r}: a timeout is a positive number of seconds (or None)")
    return timeout


def is_generator_function(fn: Callable[..., Any]) -> bool:
    return inspect.isgeneratorfunction(inspect.unwrap(fn))


@dataclass_view
@attrs.frozen(eq=False)
class PendingFunction(Generic[R]):
    """A frozen snapshot of one call: nothing runs until an operator dispatches it."""

    fn: Callable[..., R]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = attrs.field(factory=dict)
    timeout: float | None = attrs.field(default=None, converter=check_timeout)

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    @property
    def is_generator(self) -> bool:
        return is_generator_function(self.fn)

    def with_timeout(self, seconds: float) -> PendingFunction[R]:
        """The same call with a per-call timeout (seconds), e.g. `train(d).with_timeout(600) >> pool`."""
        return attrs.evolve(self, timeout=seconds)

    def local(self) -> R:
        """Run the snapshot here, in this process."""
        return self.fn(*self.args, **self.kwargs)

    def __rshift__(self, target: Any) -> R:
        return resolve_pool(target).run(self)

    def __matmul__(self, target: Any) -> list[R]:
        return resolve_pool(target).broadcast(self)

    def __gt__(self, target: Any) -> Future[R]:
        return resolve_pool(target).run_async(self)

    def __and__(self, other: PendingFunction[Any] | PendingFunctionGroup) -> PendingFunctionGroup:
        return PendingFunctionGroup((self,)) & other

    def __repr__(self) -> str:
        return f"PendingFunction({self.name}, args={len(self.args)}, kwargs={sorted(self.kwargs)})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Plain `pickle` must work too: a module-level @sky.function's name points at the wrapper,
        # so the function itself is pickled by value through cloudpickle.
        return (_rebuild_pending, (cloudpickle.dumps((self.fn, self.args, self.kwargs, self.timeout)),))


def _rebuild_pending(data: bytes) -> PendingFunction[Any]:
    fn, args, kwargs, timeout = cloudpickle.loads(data)
    return PendingFunction(fn, args, kwargs, timeout)


@attrs.frozen
class PendingFunctionGroup:
    """Pendings that run in parallel: `>>` returns a tuple (or a generator with `stream=True`)."""

    items: tuple[PendingFunction[Any], ...]
    stream: bool = False
    ordered: bool = True

    def __and__(self, other: PendingFunction[Any] | PendingFunctionGroup) -> PendingFunctionGroup:
        if isinstance(other, PendingFunctionGroup):
            return attrs.evolve(self, items=(*self.items, *other.items))
        if isinstance(other, PendingFunction):
            return attrs.evolve(self, items=(*self.items, other))
        if isinstance(other, RemoteFunction):
            raise other._not_called("&")
        raise TypeError(f"& combines pending calls, not {type(other).__name__}: call the @sky.function first")

    def __rshift__(self, target: Any) -> Any:
        return resolve_pool(target).run_parallel(self)

    def __matmul__(self, target: Any) -> Any:
        raise TypeError("A group runs with >> (each call once, in parallel); broadcast one call with @")

    def __gt__(self, target: Any) -> Any:
        raise TypeError("A group runs with >>; for futures dispatch each call with > separately")

    def __len__(self) -> int:
        return len(self.items)


def gather(*pendings: PendingFunction[Any], stream: bool = False, ordered: bool = True) -> PendingFunctionGroup:
    """Group any number of pending calls; `stream=True` yields results as they arrive."""
    for p in pendings:
        if not isinstance(p, PendingFunction):
            raise TypeError(f"gather() takes pending calls (f(x) of a @sky.function), got {type(p).__name__}")
    return PendingFunctionGroup(tuple(pendings), stream=stream, ordered=ordered)


class RemoteFunction(Generic[R]):
    """What `@sky.function` returns: calling it builds a `PendingFunction`."""

    def __init__(self, fn: Callable[..., R], timeout: float | None = None) -> None:
        self.fn = fn
        self.timeout = check_timeout(timeout)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> PendingFunction[R]:
        return PendingFunction(self.fn, args, kwargs, self.timeout)

    def local(self, *args: Any, **kwargs: Any) -> R:
        """Run the original function here."""
        return self.fn(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    # The operators belong to the pending call, not to the function: `work >> pool` (parentheses
    # forgotten) would otherwise fail with Python's bare "unsupported operand type(s)" message.
    def __rshift__(self, target: Any) -> Any:
        raise self._not_called(">>")

    def __matmul__(self, target: Any) -> Any:
        raise self._not_called("@")

    def __gt__(self, target: Any) -> Any:
        raise self._not_called(">")

    def __and__(self, other: Any) -> Any:
        raise self._not_called("&")

    def __rand__(self, other: Any) -> Any:
        raise self._not_called("&")

    def _not_called(self, op: str) -> TypeError:
        name = getattr(self.fn, "__name__", "fn")
        if op == "&":
            what, example = "groups calls", f"({name}(...) & other(...)) >> pool"
        else:
            what, example = "dispatches a call", f"{name}(...) {op} pool"
        return TypeError(
            f"{op} {what}, and {name} is the @sky.function itself, not a call of it: call it with its "
            f"arguments first, {example} (calling it runs nothing until an operator sends it)."
        )

    def __repr__(self) -> str:
        return f"<sky.function {getattr(self.fn, '__qualname__', self.fn)}>"


def not_a_call(op: str, value: Any) -> TypeError:
    """The error for `value >> pool` (`@`, `>`) where `value` is not a pending call.

    Most often `value` is what `f(...)` returned because `f` was never marked `@sky.function`: the
    call already ran here and only its result reached the operator, where Python would say just
    "unsupported operand type(s)". The pool's reflected operators raise this instead.
    """
    if isinstance(value, list | tuple) and any(isinstance(v, PendingFunction) for v in value):
        return TypeError(
            f"{op} dispatches one call of a @sky.function, not a {type(value).__name__} of calls: run them "
            "in parallel with sky.gather(*calls) >> pool (or (f(1) & f(2)) >> pool)."
        )
    return TypeError(
        f"{op} dispatches a call of a @sky.function, and its left side is {reprlib.repr(value)} "
        f"({type(value).__name__}), not such a call. If that is what f(...) returned, f is not marked "
        f"@sky.function and already ran here: decorate it with @sky.function, and f(...) {op} pool "
        "then dispatches the call instead."
    )


@overload
def function(fn: Callable[..., R], *, timeout: float | None = None) -> RemoteFunction[R]: ...
@overload
def function(fn: None = None, *, timeout: float | None = None) -> Callable[[Callable[..., R]], RemoteFunction[R]]: ...
def function(fn: Callable[..., R] | None = None, *, timeout: float | None = None) -> Any:
    """Mark a function for remote execution: bare `@sky.function` or `@sky.function(timeout=...)`."""
    if fn is None:
        return lambda f: RemoteFunction(f, timeout)
    if isinstance(fn, RemoteFunction):
        return RemoteFunction(fn.fn, timeout if timeout is not None else fn.timeout)
    if not callable(fn):
        raise TypeError(f"@sky.function decorates a function, not {type(fn).__name__}")
    return RemoteFunction(fn, timeout)


def unwrap_function(fn: Any) -> Callable[..., Any]:
    return fn.fn if isinstance(fn, RemoteFunction) else fn


# -- resolving the right-hand side of an operator -----------------------------------------------------


def resolve_pool(target: Any) -> Any:
    """A pool object, or the `sky` module standing for the active pool."""
    if hasattr(target, "run") and hasattr(target, "broadcast") and hasattr(target, "run_parallel"):
        return target
    if inspect.ismodule(target) and target.__name__.split(".")[0] == "skyward":
        from skyward.active import current_pool

        pool = current_pool()
        if pool is None:
            raise NoActivePoolError(
                "`>> sky` needs an active pool: run it inside `with sky.Compute(...) as pool:` "
                "(or a function decorated with @sky.pool), or dispatch to a pool object with `>> pool`."
            )
        return pool
    raise TypeError(
        f"Cannot dispatch to {type(target).__name__}: the right-hand side of >>, @ and > is a pool "
        "(from `with sky.Compute(...) as pool`) or the `sky` module inside an active pool."
    )


def stream_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, values: bool = True
) -> set[str | int]:
    """Which arguments travel as lazy streams: iterator values and `Iterator[...]`-annotated parameters.

    `values=False`: the caller knows no value is an iterator (plain data); only annotations count.
    """
    marked: set[str | int] = set()
    if values:
        for i, value in enumerate(args):
            if _is_stream_value(value):
                marked.add(i)
        for key, value in kwargs.items():
            if _is_stream_value(value):
                marked.add(key)
    annotated = _iterator_parameters(fn)
    if annotated:
        try:
            bound = inspect.signature(inspect.unwrap(fn)).bind_partial(*args, **kwargs)
        except TypeError:
            return marked
        positions = {name: i for i, name in enumerate(bound.arguments)}
        for name in annotated:
            if name in bound.arguments:
                marked.add(positions[name] if positions[name] < len(args) else name)
    return marked


#: Types that are never iterators: most arguments are one of them, and a type lookup is much
#: cheaper than `isinstance(value, Iterator)`, which goes through the ABC machinery.
_NEVER_STREAMS = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset})


def _is_stream_value(value: Any) -> bool:
    return type(value) not in _NEVER_STREAMS and isinstance(value, Iterator) and not isinstance(value, str | bytes)


#: `_iterator_parameters` by `id(fn)`, with a weak reference that tells a reused id apart and
#: drops the entry when `fn` goes. A cache that held `fn` itself (an `lru_cache`) would keep up to
#: its size of closures alive, and with them whatever they capture: 512 closures of 1 MB, 512 MB.
_annotated: dict[int, tuple[weakref.ref[Any], frozenset[str]]] = {}


def _iterator_parameters(fn: Callable[..., Any]) -> frozenset[str]:
    found = _annotated.get(id(fn))
    if found is not None and found[0]() is fn:
        return found[1]
    key = id(fn)
    try:
        ref = weakref.ref(fn, lambda _: _annotated.pop(key, None))
    except TypeError:  # not weak-referenceable (a builtin, a slotted callable): small, kept by count
        return _iterator_parameters_kept(fn)
    names = _read_iterator_parameters(fn)
    _annotated[key] = (ref, names)
    return names


@functools.lru_cache(maxsize=64)
def _iterator_parameters_kept(fn: Callable[..., Any]) -> frozenset[str]:
    return _read_iterator_parameters(fn)


def _read_iterator_parameters(fn: Callable[..., Any]) -> frozenset[str]:
    try:
        params = inspect.signature(inspect.unwrap(fn)).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    names = set()
    for param in params:
        text = param.annotation if isinstance(param.annotation, str) else repr(param.annotation)
        if "Iterator[" in text or text in ("Iterator", "typing.Iterator", "collections.abc.Iterator"):
            names.add(param.name)
    return frozenset(names)
