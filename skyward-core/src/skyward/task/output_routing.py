"""The machinery behind `skyward.task.output`: per-context routing of `sys.stdout` and `sys.stderr`.

`install()` puts a `RoutingStream` in place of each stream once; each write then goes wherever a
`ContextVar` says for the context doing it: the original stream (the default), a sink (such as a
`CallbackWriter`), or `DISCARD`. `route(stdout=..., stderr=...)` sets that for one context and
restores only its own tokens on exit. The public API (`redirect_output`, the decorators) is in
`skyward.task.output`, which is the task-side API and names these too.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["DISCARD", "KEEP", "CallbackWriter", "RoutingStream", "Sink", "install", "route", "uninstall"]



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


class _WriteOnly:
    """What both text streams here say of themselves: written to, never read or sought."""

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False


class RoutingStream(_WriteOnly):
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


KEEP: Any = object()  #: "leave this stream's routing as the enclosing context has it"


@contextmanager
def route(stdout: Sink | None = KEEP, stderr: Sink | None = KEEP) -> Iterator[None]:
    """Route this context's writes; only ContextVar tokens are restored on exit, nothing global."""
    if stdout is KEEP and stderr is KEEP:
        yield
        return
    install()
    out_token = _stdout_sink.set(stdout) if stdout is not KEEP else None
    err_token = _stderr_sink.set(stderr) if stderr is not KEEP else None
    try:
        yield
    finally:
        if err_token is not None:
            _stderr_sink.reset(err_token)
        if out_token is not None:
            _stdout_sink.reset(out_token)


class CallbackWriter(_WriteOnly):
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

    def fileno(self) -> int:
        raise io.UnsupportedOperation(f"{self.name} is a callback, it has no file descriptor")

    def __repr__(self) -> str:
        return f"<CallbackWriter {self.name} -> {self.callback!r}>"
