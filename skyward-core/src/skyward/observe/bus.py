"""The bus that carries a pool's events to its subscribers, and the masking every event passes.

The pool's event loop emits each `Event` (`skyward.observe.events`) here; the console, the user's
`on_event=` callback and `pool.on(...)` handlers subscribe. Events end up in consoles, log files and
user callbacks, so every secret the pool knows is masked out of an event before any handler sees it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

import attrs
import structlog

from skyward.observe.events import Event, TaskCompleted, TaskStarted
from skyward.observe.tally import TaskTally
from skyward.secrets import mask_ordered, masking_order, registered_secrets, registry_generation

__all__ = ["EventBus", "redact", "redact_ordered"]

E = TypeVar("E", bound=Event)


def redact(event: E, secrets: Iterable[str]) -> E:
    """Return `event` with every string field that contains a secret masked (the same object if none does).

    Events end up in consoles, log files and user callbacks, so a token that slipped into a
    bootstrap command or a remote print must be masked before the event is emitted. URL passwords
    (`https://user:password@host`) are masked too, even when `secrets` is empty.
    """
    return redact_ordered(event, masking_order(secrets))


def redact_ordered(event: E, ordered: list[str]) -> E:
    """`redact` with the secrets already in `masking_order` (the bus sorts them once, not per event)."""
    changes: dict[str, str] = {}
    for name in _field_names(type(event)):
        value = getattr(event, name)
        # Without secrets only a URL can hold one: a task's events (name, pool) skip the masking.
        if isinstance(value, str) and (ordered or ("://" in value and "@" in value)):
            masked = mask_ordered(value, ordered)
            if masked != value:
                changes[name] = masked
    return attrs.evolve(event, **changes) if changes else event


@functools.cache
def _field_names(kind: type) -> tuple[str, ...]:
    """An event class's field names, read once: `redact` runs for every event emitted."""
    return tuple(field.name for field in attrs.fields(kind))


# --- the bus ------------------------------------------------------------------------------------


@attrs.define
class _Subscription:
    event_type: type[Event]
    handler: Callable[[Event], None]
    #: Reads a task's start and successful end as counts (`EventBus.tally`), not as events.
    counting: bool = False


@attrs.define
class EventBus:
    """Delivers events to subscribers, synchronously, in the thread that emits them.

    Handlers run in registration order. A handler that raises is logged with its name and skipped:
    one broken callback must not stop the console, the other handlers, or the pool's event loop.
    Subscribing and unsubscribing are safe from any thread, including from inside a handler.
    Secrets added with `add_secret`, every value registered with `skyward.secrets.register_secret`
    (by any pool, plugin or provider of this process) and URL passwords are masked out of every
    event before any handler sees it.
    """

    _subscriptions: list[_Subscription] = attrs.field(factory=list, init=False)
    _secrets: set[str] = attrs.field(factory=set, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    #: The secrets to mask, longest first, and the (bus secrets, registry) state they were sorted for.
    _ordered: list[str] = attrs.field(factory=list, init=False)
    _ordered_for: tuple[int, int] = attrs.field(default=(-1, -1), init=False)
    #: Every task, counted: by its node when no handler wants its events, else here as they pass.
    tally: TaskTally = attrs.field(factory=lambda: TaskTally(counting=False), init=False)
    #: `listens`'s answers, replaced by an empty dict after the subscriptions change.
    _wanted: dict[type[Event], bool] = attrs.field(factory=dict, init=False)

    def on(
        self, event_type: type[E], handler: Callable[[E], None], *, counting_tasks: bool = False
    ) -> Callable[[], None]:
        """Call `handler` for every emitted event that is an instance of `event_type`.

        `on(Event, handler)` receives everything (this is what `on_event=` becomes). Returns a
        function that unsubscribes this registration; calling it twice is harmless.
        `counting_tasks`: the handler reads tasks as counts from `tally`, not as events (it still gets
        a failed `TaskCompleted`), so a pool builds no task events for it alone.
        """
        subscription = _Subscription(event_type, handler, counting_tasks)  # type: ignore[arg-type]
        with self._lock:
            self._subscriptions = [*self._subscriptions, subscription]  # emit reads it without the lock
            self._wanted = {}  # after the list: `listens` reads them in the other order

        def unsubscribe() -> None:
            with self._lock:
                # Identity, not equality: the same handler may be registered twice.
                self._subscriptions = [s for s in self._subscriptions if s is not subscription]
                self._wanted = {}

        return unsubscribe

    def listens(self, event_type: type[Event]) -> bool:
        """Whether an event of `event_type` would reach a handler (lets hot paths skip building it)."""
        wanted = self._wanted  # asked twice per task: answered from this dict
        if event_type not in wanted:
            task = event_type is TaskStarted or event_type is TaskCompleted
            matching = [s for s in self._subscriptions if issubclass(event_type, s.event_type)]
            wanted[event_type] = any(not (task and s.counting) for s in matching)
        return wanted[event_type]

    def add_secret(self, value: str) -> None:
        """Mask `value` out of every event emitted from now on (credentials, tokens, keys)."""
        if value:
            with self._lock:
                self._secrets.add(value)
                self._ordered_for = (-1, -1)

    def emit(self, event: Event) -> None:
        """Deliver `event` to every matching handler; never raises because of a handler."""
        kind, counted = type(event), False
        if kind is TaskStarted:
            self.tally.start(event.time)
            counted = True
        elif kind is TaskCompleted:
            counted = event.success  # type: ignore[attr-defined]
            self.tally.finish(counted, event.time)
        if not self._subscriptions:  # nobody listens (console and logging off): the common fast path
            return
        subscriptions = self._subscriptions  # replaced whole on (un)subscribe, never changed in place
        state = (len(self._secrets), registry_generation())
        if state != self._ordered_for:
            with self._lock:
                self._ordered = masking_order([*self._secrets, *registered_secrets()])
                self._ordered_for = state
        event = redact_ordered(event, self._ordered)
        for subscription in subscriptions:
            if not isinstance(event, subscription.event_type):
                continue
            if counted and subscription.counting:
                continue  # read from `tally`
            try:
                subscription.handler(event)
            except Exception:
                structlog.get_logger().exception(
                    "skyward.event_handler_failed",
                    handler=_handler_name(subscription.handler),
                    event_type=type(event).__name__,
                )


def _handler_name(handler: Callable[..., object]) -> str:
    """A readable name for a callback: module-qualified function or method name, else its repr."""
    name = getattr(handler, "__qualname__", None)
    module = getattr(handler, "__module__", None)
    if name is None:
        return repr(handler)
    return f"{module}.{name}" if module else name
