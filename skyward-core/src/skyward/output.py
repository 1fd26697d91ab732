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
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import io
import sys
import threading
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

import attrs

from skyward.instance import InstanceInfo
from skyward.runtime import current_instance_info

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


class Sink(Protocol):
    """Where a routed stream's writes go: anything with text `write` and `flush`."""

    def write(self, text: str) -> int: ...

    def flush(self) -> None: ...


class _Discard:
    """The sink of a silenced stream: accepts and drops everything."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None

    def __repr__(self) -> str:
        return "DISCARD"


DISCARD: Sink = _Discard()

# None means "the stream that was sys.stdout/sys.stderr when install() ran".
_stdout_sink: ContextVar[Sink | None] = ContextVar("skyward_stdout_sink", default=None)
_stderr_sink: ContextVar[Sink | None] = ContextVar("skyward_stderr_sink", default=None)

# Set while a sink's write runs on this thread: a callback that itself prints must reach the real
# stream, not its own sink (which would call it again, forever).
_delivering = threading.local()


class RoutingStream:
    """A text stream that sends each write to the sink the writing context chose (see module doc).

    Everything else (fileno, encoding, buffer, reconfigure, ...) is the underlying stream's, so code
    that inspects `sys.stdout` sees the process's real stream.
    """

    def __init__(self, default: Any, sink_var: ContextVar[Sink | None], label: str) -> None:
        self._default = default
        self._sink_var = sink_var
        self._label = label
        #: A write went to a sink since `flush_written` last ran.
        self._routed = False

    @property
    def default(self) -> Any:
        """The stream writes reach when no sink is chosen (what `sys.stdout` was before install)."""
        return self._default

    def _sink(self) -> Sink | None:
        if getattr(_delivering, "active", False):
            return None
        return self._sink_var.get()

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        sink = self._sink()
        if sink is None:
            return len(text) if self._default is None else self._default.write(text)
        self._routed = True
        _delivering.active = True
        try:
            sink.write(text)
        finally:
            _delivering.active = False
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        sink = self._sink()
        if sink is None:
            if self._default is not None:
                self._default.flush()
            return
        _delivering.active = True
        try:
            sink.flush()
        finally:
            _delivering.active = False

    def flush_written(self) -> None:
        """Flush before a task's outcome is sent (the worker does it for every task).

        The underlying stream is flushed directly, and the writing context's sink only when a
        write went to a sink since the last time: the router's own layers (`_sink`, a context
        lookup) cost more than the rest of a short task's output check, and a sink is rare.
        """
        if self._routed:
            self._routed = False
            self.flush()
        elif self._default is not None:
            self._default.flush()

    def isatty(self) -> bool:
        """A tty only when writes actually reach the terminal; captured output should not get colour."""
        if self._sink() is not None or self._default is None:
            return False
        return bool(self._default.isatty())

    def fileno(self) -> int:
        if self._default is None:
            raise io.UnsupportedOperation(f"{self._label} has no underlying stream")
        return int(self._default.fileno())

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        """Flush only: one task closing `sys.stdout` must not close it for the whole worker."""
        self.flush()

    @property
    def closed(self) -> bool:
        return bool(getattr(self._default, "closed", False))

    @property
    def encoding(self) -> str:
        return getattr(self._default, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self._default, "errors", None) or "strict"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or self.__dict__.get("_default") is None:
            raise AttributeError(name)
        return getattr(self._default, name)

    def __repr__(self) -> str:
        return f"<RoutingStream {self._label} over {self._default!r}>"


_install_lock = threading.Lock()


def install() -> tuple[RoutingStream, RoutingStream]:
    """Put routers in place of `sys.stdout` and `sys.stderr` (once) and return them.

    Idempotent: a stream that is already a router is kept, so calling it again never stacks routers.
    The worker calls it at start, after pointing fds 1/2 at its capture pipes; `redirect_output` and
    the decorators call it on first use, so it also works in a plain client process.
    """
    with _install_lock:
        out = _router_for(sys.stdout, _stdout_sink, "stdout")
        err = _router_for(sys.stderr, _stderr_sink, "stderr")
        sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    return out, err


def _router_for(stream: Any, var: ContextVar[Sink | None], label: str) -> RoutingStream:
    if isinstance(stream, RoutingStream) and stream._sink_var is var:
        return stream
    return RoutingStream(stream, var, label)


def uninstall() -> None:
    """Put back the streams `install()` wrapped, where routers are still in place (for shutdown/tests)."""
    with _install_lock:
        if isinstance(sys.stdout, RoutingStream):
            sys.stdout = sys.stdout.default
        if isinstance(sys.stderr, RoutingStream):
            sys.stderr = sys.stderr.default


_KEEP: Any = object()  # "leave this stream's routing as the enclosing context has it"


@contextmanager
def _route(stdout: Sink | None = _KEEP, stderr: Sink | None = _KEEP) -> Iterator[None]:
    """Route this context's writes; only ContextVar tokens are restored on exit, nothing global."""
    if stdout is _KEEP and stderr is _KEEP:
        yield
        return
    install()
    out_token = _stdout_sink.set(stdout) if stdout is not _KEEP else None
    err_token = _stderr_sink.set(stderr) if stderr is not _KEEP else None
    try:
        yield
    finally:
        if err_token is not None:
            _stderr_sink.reset(err_token)
        if out_token is not None:
            _stdout_sink.reset(out_token)


class CallbackWriter:
    """A write-only text stream that hands what is written to `callback`.

    With `lines=True` (the default) the callback gets one call per complete line, without its
    newline, so `lines.append` collects printed lines as they were printed; a partial line is
    delivered on `flush()` (progress bars flush after each update) and when `redirect_output` exits.
    With `lines=False` it gets every write as is.
    """

    def __init__(self, callback: Callable[[str], object], *, lines: bool = True, name: str = "<callback>"):
        if not callable(callback):
            raise TypeError(f"CallbackWriter needs a callable taking a str, got {type(callback).__name__}")
        self.callback = callback
        self.lines = lines
        self.name = name
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not text:
            return 0
        if not self.lines:
            self.callback(text)
            return len(text)
        with self._lock:
            *complete, self._pending = (self._pending + text).split("\n")
        for line in complete:  # outside the lock: the callback may take its time, or write again
            self.callback(line)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, ""
        if pending:
            self.callback(pending)

    def close(self) -> None:
        self.flush()

    @property
    def closed(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"

    @property
    def errors(self) -> str:
        return "strict"

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation(f"{self.name} is a callback, it has no file descriptor")

    def __repr__(self) -> str:
        return f"<CallbackWriter {self.name} -> {self.callback!r}>"


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
        with _route(stdout=out, stderr=err):
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
        return _KEEP
    if rule is False:
        return DISCARD
    info = current_instance_info()
    if info is None or rule(info):
        return _KEEP
    return DISCARD


def _factory(decorator: str, misuse: tuple[object, ...], only: object, *, stream: str) -> Callable[[F], F]:
    if misuse or only is _KEEP:
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


def stdout(*misuse: object, only: str | Callable[[InstanceInfo], bool] = _KEEP) -> Callable[[F], F]:
    """Decorator factory: keep the task's stdout only where `only` holds, discard it elsewhere.

    `only` is "head" or a predicate on `sky.instance_info()`, evaluated when the task runs. Stack it
    above or below `@sky.function`. Off a pool (a plain local call) nothing is filtered.
    """
    return _factory("sky.stdout", misuse, only, stream="stdout")


def stderr(*misuse: object, only: str | Callable[[InstanceInfo], bool] = _KEEP) -> Callable[[F], F]:
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
                    with _route(*sinks):
                        try:
                            item = await agen.__anext__()
                        except StopAsyncIteration:
                            return
                    yield item
            finally:
                with _route(*sinks):
                    await agen.aclose()

        wrapper: Any = agen_wrapper
    elif inspect.isgeneratorfunction(target):

        def gen_wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            sinks = _decide(out_rule), _decide(err_rule)
            return (yield from _drive(target(*args, **kwargs), sinks))

        wrapper = gen_wrapper
    elif inspect.iscoroutinefunction(target):

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            with _route(_decide(out_rule), _decide(err_rule)):
                return await target(*args, **kwargs)

        wrapper = async_wrapper
    else:

        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            with _route(_decide(out_rule), _decide(err_rule)):
                return target(*args, **kwargs)

        wrapper = sync_wrapper
    return functools.wraps(target)(wrapper)


def _drive(gen: Generator[Any, Any, Any], sinks: tuple[Any, Any]) -> Generator[Any, Any, Any]:
    """Step `gen` with the routing applied, and only while it runs (not while the consumer does)."""
    step: Callable[[Any], Any] = gen.send
    arg: Any = None
    while True:
        with _route(*sinks):
            try:
                item = step(arg)
            except StopIteration as stop:
                return stop.value
        try:
            arg = yield item
            step = gen.send
        except GeneratorExit:
            with _route(*sinks):
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
