"""Preparing a task on the caller's thread: its function shipped, its frame encoded, its streams.

Everything that can fail because of what the caller passed fails here, before anything is sent: a
generator under the process executor, an argument that cannot be pickled (named by position or
keyword), a one-shot iterator given to a broadcast.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from skyward.client import blobs as content
from skyward.client.blobs import as_blobs
from skyward.client.shipping import ShippedFunction, ship
from skyward.client.tasks import TaskState, Waiter
from skyward.errors import ConfigurationError, SerializationError
from skyward.function import PendingFunction, stream_arguments
from skyward.messages import StreamRef, TaskMessage
from skyward.payload import check_picklable, is_plain
from skyward.wire import Kind, encode

#: Items a generator task may run ahead of its consumer.
STREAM_WINDOW = 16

#: The functions one dispatch call shipped, by `id(fn)`, and its large arguments, by
#: `("blob", id(value))`: a `map` or a broadcast pickles each once.
ShipCache = dict[Any, Any]


def shipped(fn: Any, name: str, executor: str, cache: ShipCache | None = None) -> ShippedFunction:
    """The function as a worker receives it, once per function and dispatch call."""
    found = cache.get(id(fn)) if cache is not None else None
    if found is None:
        found = ship(fn, name)
        if found.generator and executor == "process":
            raise ConfigurationError(
                f"{name}() is a generator, and streaming needs the thread executor: use "
                "sky.Worker(executor='thread') or return a list."
            )
        if cache is not None:
            cache[id(fn)] = found
    return found


def build_task(
    fn: Any,
    name: str,
    function: ShippedFunction,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    target: int | None,
    timeout: float | None,
    waiter: Waiter | None,
    cache: ShipCache | None = None,
    large: bool = True,
) -> TaskState:
    """One task, its frame encoded here on the caller's thread (errors name the argument).

    `large`: its large arguments travel apart, by content key (`skyward.client.blobs`): the
    task's own copy of `function` lists them, for the worker's ledger."""
    plain = is_plain((args, kwargs))  # plain data holds no iterator to stream
    args, kwargs, inputs = _streams(fn, args, kwargs, plain)
    blobs: tuple[Any, ...] = ()
    if large:
        args, kwargs, blobs = as_blobs(args, kwargs, cache)
    task_id = TaskState.next_id()
    parts = _encode(fn, name, function, args, kwargs, task_id, bool(inputs), plain and not blobs, bool(blobs))
    # A large task may owe its size to an argument of unknown size: measure them.
    if large and sum(memoryview(part).nbytes for part in parts) >= content.BLOB_MIN:
        args, kwargs, more = as_blobs(args, kwargs, cache, measure=True)
        if more:
            blobs += more
            parts = _encode(fn, name, function, args, kwargs, task_id, bool(inputs), False, True)
    if blobs:
        function = attrs.evolve(function, blobs=blobs)
    return TaskState(
        name=name, function=function, parts=parts, task_id=task_id, target=target, timeout=timeout,
        window=STREAM_WINDOW, inputs=inputs, waiter=waiter,
    )


def _encode(
    fn: Any, name: str, function: ShippedFunction, args: tuple[Any, ...], kwargs: dict[str, Any],
    task_id: int, streams: bool, plain: bool, blobs: bool = False,
) -> list[Any]:
    message = TaskMessage.wire(
        function.key, args, kwargs, name, function.generator, STREAM_WINDOW, streams, blobs
    )
    try:
        # With plain arguments the standard pickler will do.
        return encode(Kind.TASK, task_id, message, plain=plain)
    except Exception as exc:  # noqa: BLE001 - name the culprit
        for i, arg in enumerate(args):
            check_picklable(f"Argument {i} of {name}()", arg)
        for key, value in kwargs.items():
            check_picklable(f"Argument {key}= of {name}()", value)
        raise SerializationError(f"The call {name}(...) cannot be pickled: {exc}") from exc


def _streams(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], plain: bool = False
) -> tuple[tuple[Any, ...], dict[str, Any], dict[int, Iterator[Any]]]:
    """The arguments with each iterator marked for streaming replaced by a `StreamRef`, and the
    iterators by stream id (the worker pulls their items while the task runs)."""
    marked = stream_arguments(fn, args, kwargs, values=not plain)
    if not marked:
        return args, kwargs, {}
    inputs: dict[int, Iterator[Any]] = {}

    def as_stream(value: Any) -> StreamRef:
        ref = StreamRef(TaskState.next_id())
        inputs[ref.stream_id] = iter(value)
        return ref

    new_args = tuple(as_stream(a) if i in marked else a for i, a in enumerate(args))
    new_kwargs = {k: as_stream(v) if k in marked else v for k, v in kwargs.items()}
    return new_args, new_kwargs, inputs


def not_pending(value: Any) -> TypeError:
    """The error for dispatching something other than a pending call."""
    return TypeError(
        f"Pools run pending calls, not {type(value).__name__}: decorate the function with "
        "@sky.function and call it, e.g. `train(data) >> pool`."
    )


def refuse_one_shot_iterators(pending: PendingFunction[Any]) -> None:
    """Refuse an iterator argument of a broadcast: it can be read once, so the workers would each
    get a share of its items, not all of them, where `@` promises each the same call. A list, a
    range or another re-iterable gives every worker all of it."""
    if not isinstance(pending, PendingFunction):
        return  # `not_pending` names that mistake
    named = [(f"Argument {i}", v) for i, v in enumerate(pending.args)]
    named += [(f"Argument {k}=", v) for k, v in pending.kwargs.items()]
    for label, value in named:
        if _is_one_shot(value):
            raise ConfigurationError(
                f"{label} of {pending.name}() is an iterator ({type(value).__name__}), which can be read "
                "only once, and `@` runs the call on every worker: they would split its items between "
                "them. Pass a list or another re-iterable (each worker then reads all of it), or "
                "dispatch one call per part with `>>` or pool.map."
            )


def _is_one_shot(value: Any) -> bool:
    try:
        return isinstance(value, Iterator) and iter(value) is value
    except Exception:  # noqa: BLE001 - an odd __iter__: not ours to judge
        return False
