"""`sky.Compute(name=NAME)` attaching to a pool the pool server holds, instead of starting its own.

When a server is named (`sky.Options(server=URL)`, the `server=` shortcut, or
`$SKYWARD_SERVER_URL`) and it holds a ready pool called NAME, `sky.Compute(name=NAME)` returns an
`AttachedPool`: the same operators and methods (`>>`, `@`, `>`, `&`/`sky.gather`, `map`,
`current_nodes`), each dispatch sent to the server as one pickle (`skyward.server.dispatch`) and
run there on the warm pool. Nothing is provisioned or bootstrapped, and leaving the block only
detaches: the pool stays on the server. A server that holds no such pool leaves `sky.Compute` to
start a pool of its own, as without a server; a server named with `Options(server=...)` that
cannot be reached is an error, one found only through the environment a warning.

A generator's items and a streamed `sky.gather`'s results arrive item by item, as with a pool of
one's own (the server streams them: `dispatch_stream`); `resize` resizes the server's pool, and
`pool.on` subscribes to its live events (`skyward.server.feed`): those of every script attached
to it, since the pool is shared. A function defined in a module of the
project (not installed) is shipped by value, so the server need not import the project.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import threading
import urllib.parse
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import cloudpickle
import structlog

from skyward import active
from skyward.client import server_home
from skyward.client.server_api import Client, FrameStream, ServerError
from skyward.errors import ConfigurationError
from skyward.function import PendingFunction, PendingFunctionGroup, not_a_call, unwrap_function


def attach(name: str, options: Any, kwargs: dict[str, Any]) -> AttachedPool | None:
    """The server's pool `name` when a server is named and holds it ready; None otherwise."""
    explicit = kwargs.get("server") or (getattr(options, "server", None) if options is not None else None)
    url = explicit or os.environ.get(server_home.URL_ENV)
    if not url:
        return None
    try:
        client = Client(url, server_home.server_token())
        described = client.get(name)
    except (ServerError, ConfigurationError) as error:
        if getattr(error, "status", 0) == 404:
            return None
        if explicit:
            raise ConfigurationError(f"Compute(name={name!r}, server={url!r}): {error}") from None
        warnings.warn(f"{server_home.URL_ENV}={url}: {error}; starting a pool of this script's own",
                      RuntimeWarning, stacklevel=3)
        return None
    if described.get("state") != "ready":
        raise ConfigurationError(
            f"the server at {url} holds pool {name!r} but it is {described.get('state')}"
            f"{': ' + described['error'] if described.get('error') else ''}; "
            f"see `sky compute get {name}`"
        )
    return AttachedPool(name, client)


#: Guards `_by_value_holds`: cloudpickle's by-value registry is one set for the whole process.
_by_value_lock = threading.Lock()
#: How many calls under way hold each module registered by value (registered by `_dumps` only).
_by_value_holds: dict[str, int] = {}


def _dumps(value: Any, fn: Any) -> bytes:
    """`value` pickled, `fn`'s module by value when it is the project's (under the current folder).

    Concurrent calls share the registration: the first registers the module, the last one out
    unregisters it, so one call's `unregister` never pulls the module from under another's pickling
    (cloudpickle's registry is process-wide). A module the user registered stays theirs.
    """
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    path = getattr(module, "__file__", None) or ""
    ours = module is not None and module.__name__ != "__main__" and os.path.abspath(path).startswith(
        os.getcwd() + os.sep)
    if not ours:
        return cloudpickle.dumps(value)
    assert module is not None
    held = _hold_by_value(module)
    try:
        return cloudpickle.dumps(value)
    finally:
        if held:
            _release_by_value(module)


def _hold_by_value(module: Any) -> bool:
    """Register `module` by value for one call; False when the user registered it themselves."""
    name = module.__name__
    with _by_value_lock:
        if name in _by_value_holds:
            _by_value_holds[name] += 1
            return True
        if name in cloudpickle.list_registry_pickle_by_value():
            return False
        cloudpickle.register_pickle_by_value(module)
        _by_value_holds[name] = 1
        return True


def _release_by_value(module: Any) -> None:
    name = module.__name__
    with _by_value_lock:
        _by_value_holds[name] -= 1
        if _by_value_holds[name] == 0:
            del _by_value_holds[name]
            cloudpickle.unregister_pickle_by_value(module)


class AttachedPool:
    """A pool the server holds, used from this process (see the module's doc)."""

    def __init__(self, name: str, client: Client) -> None:
        self.name = name
        self.client = client
        self._token: Any = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        #: `pool.on` handlers, and the subscription to the server's events that feeds them.
        self._handlers: list[tuple[type[Any], Callable[[Any], None]]] = []
        self._events: FrameStream | None = None
        self._listener: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def _path(self) -> str:
        return f"/v1/pools/{urllib.parse.quote(self.name, safe='')}/call"

    def _call(self, kind: str, payload: Any, target: Any, fn: Any) -> Any:
        answer = self.client.call_pickled(self._path, _dumps((kind, payload, target), fn))
        status, value = cloudpickle.loads(answer)
        if status == "error":
            raise value
        return value

    def _stream(self, kind: str, payload: Any, target: Any, fn: Any) -> Iterator[Any]:
        """The call is sent now; its items are read as the server streams them."""
        frames = self.client.frames(self._path + "?stream=1", _dumps((kind, payload, target), fn))

        def items() -> Iterator[Any]:
            for frame in frames:
                status, value = cloudpickle.loads(frame)
                if status == "item":
                    yield value
                elif status == "error":
                    raise value
                else:
                    return
            raise ServerError(f"the server at {self.client.url} ended {kind}'s stream before its end; "
                              f"see `sky compute get {self.name}`")

        return items()

    # -- lifecycle: attaching and detaching; the pool itself stays on the server -----------------------

    def __enter__(self) -> AttachedPool:
        self._token = active.push(self)
        return self

    def __exit__(self, *exc: object) -> None:
        active.pop(self, self._token)
        self._token = None
        self.stop()

    def start(self) -> AttachedPool:
        return self

    def stop(self, reason: str = "") -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
        with self._lock:
            events, listener = self._events, self._listener
            self._events = self._listener = None
            self._handlers.clear()
        if events is not None:
            events.close()
        if listener is not None:
            listener.join(5)

    # -- dispatch ------------------------------------------------------------------------------------

    def run(self, pending: PendingFunction[Any], *, target: int | str | None = None) -> Any:
        if _is_generator(_pending(pending)):
            return self._stream("run", pending, target, pending.fn)
        return self._call("run", _pending(pending), target, pending.fn)

    def run_async(self, pending: PendingFunction[Any], *, target: int | str | None = None
                  ) -> concurrent.futures.Future[Any]:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix=f"skyward-{self.name}")
        return self._executor.submit(self.run, pending, target=target)

    def broadcast(self, pending: PendingFunction[Any]) -> list[Any]:
        return list(self._call("broadcast", _pending(pending), None, pending.fn))

    def run_parallel(self, group: PendingFunctionGroup) -> Any:
        fn = group.items[0].fn if group.items else None
        if group.stream:
            return self._stream("parallel", group, None, fn)
        return self._call("parallel", group, None, fn)

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        return list(self._call("map", (fn, list(items)), None, unwrap_function(fn)))

    def current_nodes(self) -> int:
        return int(self.client.get(self.name)["nodes"])

    def resize(self, nodes: int | Any) -> None:
        """Grow or shrink the server's pool (for every script attached to it): `Pool.resize`."""
        self._call("resize", nodes, None, None)

    def on(self, event_type: type[Any], handler: Callable[[Any], None]) -> Callable[[], None]:
        """Call `handler` for every event of `event_type` the server's pool emits from now on
        (every attached script's tasks included), on a thread of this process; returns what
        unsubscribes it. The first call subscribes to the server's event stream."""
        entry = (event_type, handler)
        with self._lock:
            self._handlers.append(entry)
            if self._events is None:
                self._events = self.client.frames(self._path.rsplit("/", 1)[0] + "/events")
                frames = iter(self._events)
                next(frames, None)  # the empty frame: subscribed, nothing emitted from now on is missed
                self._listener = threading.Thread(target=self._listen, args=(frames,), daemon=True,
                                                  name=f"skyward-events-{self.name}")
                self._listener.start()

        def off() -> None:
            with self._lock:
                if entry in self._handlers:
                    self._handlers.remove(entry)

        return off

    def _listen(self, frames: Iterator[bytes]) -> None:
        log = structlog.get_logger()
        for frame in frames:
            if not frame:
                continue
            event = cloudpickle.loads(frame)
            with self._lock:
                handlers = [h for t, h in self._handlers if isinstance(event, t)]
            for handler in handlers:
                try:
                    handler(event)
                except Exception as error:  # noqa: BLE001 - a handler's bug must not end the feed
                    log.warning("skyward.event_handler_failed", pool=self.name, error=str(error))

    def __repr__(self) -> str:
        return f"<sky.Pool {self.name} attached to {self.client.url}>"

    def __rrshift__(self, value: Any) -> Any:
        raise not_a_call(">>", value)

    def __rmatmul__(self, value: Any) -> Any:
        raise not_a_call("@", value)

    def __lt__(self, value: Any) -> Any:
        raise not_a_call(">", value)


def _pending(pending: Any) -> PendingFunction[Any]:
    if not isinstance(pending, PendingFunction):
        from skyward.client.preparation import not_pending

        raise not_pending(pending)
    return pending


def _is_generator(pending: PendingFunction[Any]) -> bool:
    import inspect

    return inspect.isgeneratorfunction(unwrap_function(pending.fn))
