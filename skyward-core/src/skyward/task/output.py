"""Output control inside tasks: `sky.stdout`, `sky.stderr`, `sky.silent`, `sky.redirect_output`.

A worker runs several tasks at once on threads of one process, and they all share `sys.stdout`, so
swapping `sys.stdout` per task (as `contextlib.redirect_stdout` does) would silence or capture the
neighbours too. Instead `install()` puts a `RoutingStream` in place of `sys.stdout`/`sys.stderr`
once, and each write goes wherever a `ContextVar` says for the context doing the write: the original
stream (the default), a callback, or nowhere. Each task runs in its own context, so a silenced task
and a chatty one can print side by side without affecting each other.

What this cannot see: writes straight to file descriptor 1/2 (subprocesses, C extensions,
`os.write`), and writes through `sys.stdout.buffer`; they reach the underlying stream unfiltered.
Threads a task starts run in a fresh context (Python < 3.14) and so print to the default stream
unless started under `contextvars.copy_context().run`.

The routers themselves are `skyward.task.output_routing`'s; this module is the whole task-side API
(`sky.CallbackWriter`, and `install` for the worker), so it names them too.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import attrs

from skyward.task.instance import InstanceInfo
from skyward.task.output_routing import (
    DISCARD,
    KEEP,
    CallbackWriter,
    RoutingStream,
    Sink,
    install,
    route,
    uninstall,
)
from skyward.task.runtime import current_instance_info

__all__ = [
    "DISCARD",
    "CallbackWriter",
    "RoutingStream",
    "install",
    "redirect_output",
    "silent",
    "stderr",
    "stdout",
    "uninstall",
]

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def redirect_output(
    callback: Callable[[str], object], *, lines: bool = True
) -> Iterator[tuple[CallbackWriter, CallbackWriter]]:
    """Send this context's stdout and stderr writes to `callback(str)`; yields `(stdout, stderr)`.

    Only the current context is affected (other tasks and threads keep printing normally), and on
    exit nothing global is restored or removed: the routers stay, routing back to the default.
    """
    out = CallbackWriter(callback, lines=lines, name="<stdout>")
    err = CallbackWriter(callback, lines=lines, name="<stderr>")
    try:
        with route(stdout=out, stderr=err):
            yield out, err
    finally:
        # After the routing is gone, so a callback that prints while flushing reaches the real stream.
        out.flush()
        err.flush()


# ---------------------------------------------------------------------------------------------------
# Decorators

# A rule for one stream: None leaves it alone, False always discards it, a predicate decides per node.
_Rule = Callable[[InstanceInfo], bool] | bool | None

_ONLY_FORMS = 'only="head" or only=<predicate Callable[[InstanceInfo], bool]>'


def _on_head(info: InstanceInfo) -> bool:
    """The `only="head"` predicate; module-level so decorated functions pickle it by reference."""
    return info.is_head


def _predicate(only: object, decorator: str) -> Callable[[InstanceInfo], bool]:
    if isinstance(only, str):
        if only == "head":
            return _on_head
        raise ValueError(f"{decorator}(only={only!r}) is not supported; use {_ONLY_FORMS}")
    if callable(only):
        return only  # type: ignore[return-value]
    raise TypeError(f"{decorator}(only=...) takes {_ONLY_FORMS}; got {type(only).__name__}")


def _decide(rule: _Rule) -> Sink | None:
    """The sink for one stream during one call; off a pool a predicate cannot be asked, so keep output."""
    if rule is None or rule is True:
        return KEEP
    if rule is False:
        return DISCARD
    info = current_instance_info()
    if info is None or rule(info):
        return KEEP
    return DISCARD


def _factory(decorator: str, misuse: tuple[object, ...], only: object, *, stream: str) -> Callable[[F], F]:
    if misuse or only is KEEP:
        raise TypeError(
            f'{decorator} is a decorator factory: write @{decorator}(only="head") or '
            f"@{decorator}(only=lambda info: info.node < 2)"
        )
    rule = _predicate(only, decorator)

    def decorate(fn: F) -> F:
        if stream == "stdout":
            return _filtered(fn, rule, None)
        return _filtered(fn, None, rule)

    return decorate


def stdout(*misuse: object, only: str | Callable[[InstanceInfo], bool] = KEEP) -> Callable[[F], F]:
    """Decorator factory: keep the task's stdout only where `only` holds, discard it elsewhere.

    `only` is "head" or a predicate on `sky.instance_info()`, evaluated when the task runs. Stack it
    above or below `@sky.function`. Off a pool (a plain local call) nothing is filtered.
    """
    return _factory("sky.stdout", misuse, only, stream="stdout")


def stderr(*misuse: object, only: str | Callable[[InstanceInfo], bool] = KEEP) -> Callable[[F], F]:
    """Decorator factory: keep the task's stderr only where `only` holds (see `stdout`)."""
    return _factory("sky.stderr", misuse, only, stream="stderr")


def silent(fn: F | None = None) -> F:
    """Bare decorator: discard both stdout and stderr while the function runs, everywhere.

    Written `@sky.silent`; `@sky.silent()` is tolerated too.
    """
    if fn is None:
        return silent  # type: ignore[return-value]
    return _filtered(fn, False, False)


def _filtered(target: Any, out_rule: _Rule, err_rule: _Rule) -> Any:
    """Wrap `target` so its body runs with the streams routed per the rules.

    A `@sky.function` object (anything that is not a plain routine but has a callable `.fn`) is
    rebuilt around a filtered `.fn`: wrapping its call would only filter the creation of the pending
    task on the client, not the run on the worker.
    """
    inner = getattr(target, "fn", None)
    # Not `inspect.isroutine`: `RemoteFunction` defines `__get__` (to bind as a method), which makes
    # it a "method descriptor" to `isroutine`, and it would then be wrapped as a plain callable.
    plain = inspect.isfunction(target) or inspect.ismethod(target) or inspect.isbuiltin(target)
    if not plain and callable(inner) and inner is not target:
        return _with_fn(target, _filtered(inner, out_rule, err_rule))
    if not callable(target):
        raise TypeError(f"output decorators apply to functions, got {type(target).__name__}")

    if inspect.isasyncgenfunction(target):

        async def agen_wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            # Stepped by hand, like `_drive`, so the routing covers the body but not the consumer.
            sinks = _decide(out_rule), _decide(err_rule)
            agen = target(*args, **kwargs)
            try:
                while True:
                    with route(*sinks):
                        try:
                            item = await agen.__anext__()
                        except StopAsyncIteration:
                            return
                    yield item
            finally:
                with route(*sinks):
                    await agen.aclose()

        wrapper: Any = agen_wrapper
    elif inspect.isgeneratorfunction(target):

        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            sinks = _decide(out_rule), _decide(err_rule)
            return (yield from _drive(target(*args, **kwargs), sinks))

        wrapper = gen_wrapper
    elif inspect.iscoroutinefunction(target):

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            with route(_decide(out_rule), _decide(err_rule)):
                return await target(*args, **kwargs)

        wrapper = async_wrapper
    else:

        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            with route(_decide(out_rule), _decide(err_rule)):
                return target(*args, **kwargs)

        wrapper = sync_wrapper
    return functools.wraps(target)(wrapper)


def _drive(gen: Generator[Any, Any, Any], sinks: tuple[Any, Any]) -> Generator[Any, Any, Any]:
    """Step `gen` with the routing applied, and only while it runs (not while the consumer does)."""
    step: Callable[[Any], Any] = gen.send
    arg: Any = None
    while True:
        with route(*sinks):
            try:
                item = step(arg)
            except StopIteration as stop:
                return stop.value
        try:
            arg = yield item
            step = gen.send
        except GeneratorExit:
            with route(*sinks):
                gen.close()
            raise
        except BaseException as exc:
            step, arg = gen.throw, exc


def _with_fn(wrapper: Any, fn: Callable[..., Any]) -> Any:
    """A copy of a `@sky.function` object whose `.fn` is `fn` (attrs, dataclass, or plain object)."""
    cls = type(wrapper)
    try:
        if attrs.has(cls):
            return attrs.evolve(wrapper, fn=fn)
        if dataclasses.is_dataclass(wrapper) and not isinstance(wrapper, type):
            return dataclasses.replace(wrapper, fn=fn)
    except (TypeError, ValueError):
        pass  # `fn` is not an init argument there; fall back to copying
    clone = copy.copy(wrapper)
    object.__setattr__(clone, "fn", fn)
    return clone
