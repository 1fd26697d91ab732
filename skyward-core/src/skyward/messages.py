"""Payloads that travel inside frames: what a task is, what a failure is, what a worker is told.

Kept apart from `wire` (which knows bytes, not meanings) so both sides import one small module.
"""

from __future__ import annotations

from typing import Any

import attrs
import cloudpickle

from skyward import tracebacks
from skyward.errors import RemoteError, SerializationError
from skyward.secrets import mask_exception


@attrs.frozen
class StreamRef:
    """Stands in for an iterator argument: the worker pulls its items from the client on demand."""

    stream_id: int


@attrs.frozen
class TaskMessage:
    """One task as the worker receives it.

    The function travels once per node in a FUNCTION frame and is cached on the worker by
    `fn_key`, so a `map` over 10,000 items ships and unpickles it once per node, not per item.
    """

    fn_key: bytes
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    name: str
    generator: bool = False
    window: int = 16
    #: Some argument is a `StreamRef`: the worker must read items while the task runs.
    streams: bool = False
    #: Some argument is a `BlobRef` (a large argument sent apart, skyward/worker/blobs.py).
    blobs: bool = False

    def to_wire(self) -> tuple[Any, ...]:
        """The TASK frame's payload: a plain tuple of the fields, which the C pickler writes and
        reads in a fraction of the time a class with a `__reduce__` takes (most of a short
        task's encoding)."""
        return TaskMessage.wire(
            self.fn_key, self.args, self.kwargs, self.name, self.generator, self.window, self.streams,
            self.blobs,
        )

    @staticmethod
    def wire(
        fn_key: bytes,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str,
        generator: bool,
        window: int,
        streams: bool = False,
        blobs: bool = False,
    ) -> tuple[Any, ...]:
        """The payload for these fields without building the message (the client's hot path);
        the one place that fixes the fields' order on the wire, with `from_wire`."""
        if blobs:
            return (fn_key, args, kwargs, name, generator, window, streams, blobs)
        return (fn_key, args, kwargs, name, generator, window, streams)

    @classmethod
    def from_wire(cls, payload: tuple[Any, ...]) -> TaskMessage:
        """The task a worker takes, as sent: with `blobs`, its large arguments are still `BlobRef`s,
        which the worker puts back from what it holds (`skyward.worker.blobs.resolve_task`)."""
        return cls(*payload)


@attrs.frozen
class Hello:
    """The handshake: everything a worker must know before its first task."""

    info: Any  # InstanceInfo
    concurrency: int
    executor: str  # "thread" | "process"
    reuse_processes: bool
    env: dict[str, str]
    sys_path: tuple[str, ...] = ()
    plugins: tuple[Any, ...] = ()
    #: Seconds of client silence after which the worker stops itself (`Spec.ttl`); 0 disables it.
    ttl: float = 0
    #: Run by the worker as it stops for silence (clouds: "sudo shutdown -h now"); None for none.
    shutdown_command: str | None = None
    #: Where the image's includes came from on the client (`tracebacks.include_sources`): a remote
    #: traceback names the user's files, not the node's copies.
    include_sources: tuple[tuple[str, str], ...] = ()
    #: What the node's sampler measures (`skyward.metrics.sampling_plan`); empty: no sampler.
    metrics: tuple[tuple[Any, ...], ...] = ()


@attrs.frozen
class RemoteFailure:
    """A remote exception, kept rebuildable: the pickled exception when possible, always its text."""

    type_name: str
    message: str
    traceback: str
    exc_bytes: bytes | None = None

    @classmethod
    def capture(cls, exc: BaseException) -> RemoteFailure:
        text = tracebacks.format_exception(exc)
        try:
            exc_bytes = cloudpickle.dumps(exc)
        except Exception:  # noqa: BLE001 - an unpicklable exception still travels as text
            exc_bytes = None
        return cls(f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc), text, exc_bytes)

    def rebuild(self, node: int | None = None) -> BaseException:
        """The exception to raise on the client: its own type when it unpickles, else RemoteError.

        Its note is the remote traceback with the source lines the worker could not read (a
        script's or a notebook cell's code shipped by value) filled in from this process's
        `linecache` (see `skyward.tracebacks`).
        """
        where = f"node {node}" if node is not None else "the worker"
        text = tracebacks.with_source_lines(self.traceback)
        exc: BaseException | None = None
        if self.exc_bytes is not None:
            try:
                exc = cloudpickle.loads(self.exc_bytes)
            except Exception:  # noqa: BLE001 - e.g. the class only exists on the worker
                exc = None
        if not isinstance(exc, BaseException):
            exc = RemoteError(self.type_name, self.message, text)
        exc.__traceback__ = None
        exc.add_note(f"Remote traceback (from {where}):\n{text.rstrip()}")
        # A task's message may quote a token it read from its environment: the exception the user
        # sees (and logs, and prints) carries the registered secrets masked, as the console does.
        return mask_exception(exc)


def function_key(fn_bytes: bytes) -> bytes:
    """Content address of a pickled function: equal bytes, equal function, one cache entry."""
    import hashlib  # here: only the client computes keys, and workers start faster without it

    return hashlib.blake2b(fn_bytes, digest_size=16).digest()


def pickle_function(fn: Any, name: str) -> bytes:
    """`fn` for the wire, through `skyward.pickling` (which keeps the file names of code shipped by
    value, so a remote traceback names the user's file)."""
    from skyward import pickling

    try:
        return pickling.dumps(fn)
    except Exception as exc:  # noqa: BLE001
        raise SerializationError(
            f"The function {name}() cannot be pickled: {exc}. A task's closure and the globals it "
            "uses are shipped with cloudpickle; create locks, connections and open files inside it."
        ) from exc
