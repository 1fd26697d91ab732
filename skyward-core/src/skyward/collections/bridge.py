"""Collections from an `executor="process"` subprocess: requests go to its worker over a pipe of
their own, and the worker forwards them on its channel.

The pipe is not the one tasks travel on, so a request never waits for the task's own exchange: the
worker reads it on a thread of its own (`serve`) and answers when the store does, whatever the
task is doing, and a subprocess's threads may each wait for their own answers. When the
subprocess ends (or is killed by a cancel), whatever it still waited for is abandoned.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
from collections.abc import Callable
from typing import Any

import cloudpickle

from skyward.collections import transport
from skyward.errors import PoolClosedError
from skyward.payload import is_plain


def _dumps(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=5) if is_plain(obj) else cloudpickle.dumps(obj, protocol=5)


class BridgeClient(transport.RequestClient):
    """A task subprocess's client: requests to its worker over `conn`, answers read by a thread."""

    def __init__(self, conn: Any) -> None:
        super().__init__()
        self._conn = conn
        self._send_lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def _send(self, rid: int, payload: tuple[Any, ...]) -> None:
        data = _dumps((rid, payload))
        with self._send_lock:
            if rid and self._reader is None:
                self._reader = threading.Thread(target=self._read, name="skyward-collections", daemon=True)
                self._reader.start()
            self._conn.send_bytes(data)

    def _read(self) -> None:
        while True:
            try:
                rid, answer = pickle.loads(self._conn.recv_bytes())
            except (EOFError, OSError):
                self.close(PoolClosedError("the worker of this task subprocess is gone"))
                return
            self.answer(rid, answer)


def install_child(conn: Any) -> None:
    """In a task subprocess, at start: collections go through `conn` to the worker."""
    if conn is not None:
        transport.install(BridgeClient(conn))


def before_reply() -> None:
    """In a task subprocess, before its task's outcome goes to the worker: the task's buffered
    eventual writes reach the store first (a round trip, only when there are some)."""
    client = transport.current()
    if isinstance(client, BridgeClient) and client.eventual.used:
        client.eventual.flush(wait=True)


def serve(conn: Any, current_task: Callable[[], int]) -> threading.Thread:
    """In the worker: forward the requests of the subprocess at the other end of `conn`, as those
    of its running task (`current_task`), on a thread that ends with the subprocess."""
    thread = threading.Thread(
        target=_serve, args=(conn, current_task), name="skyward-collections-bridge", daemon=True
    )
    thread.start()
    return thread


def _serve(conn: Any, current_task: Callable[[], int]) -> None:
    send_lock = threading.Lock()
    waiting: dict[int, int] = {}  # the worker's request id -> the subprocess's

    def reply(child_rid: int, answer: transport.Answer, rid: int = 0) -> None:
        waiting.pop(rid, None)
        try:
            data = _dumps((child_rid, answer))
        except Exception as exc:  # noqa: BLE001 - an exception that will not pickle still answers
            data = _dumps((child_rid, (False, RuntimeError(repr(exc)))))
        with send_lock, contextlib.suppress(OSError):  # OSError: the subprocess is gone
            conn.send_bytes(data)

    client: Any = None
    while True:
        try:
            child_rid, payload = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            break
        client = transport.current()
        if payload[0] == transport.OWNED:
            payload = (current_task(), *payload[1:])
        if client is None:
            if child_rid:
                reply(child_rid, (False, PoolClosedError("this worker has no way to the pool's store")))
            continue
        if not child_rid:
            if payload[3] == "abandon":  # the subprocess's id for it: ours is another
                by_child = {c: r for r, c in waiting.items()}
                rid = by_child.get(payload[4][0])
                if rid is not None:
                    client.abandon(rid)
            else:
                client.post(payload)
            continue
        holder: list[int] = []
        try:
            rid = client.submit(
                payload, lambda answer, c=child_rid, h=holder: reply(c, answer, h[0] if h else 0)
            )
        except BaseException as exc:  # noqa: BLE001 - answered to the subprocess, raised there
            reply(child_rid, (False, exc))
            continue
        holder.append(rid)
        waiting[rid] = child_rid
    if client is not None:
        for rid in list(waiting):
            client.abandon(rid)
    conn.close()


