"""The pool server's HTTP plumbing: the token check, the call gate, bounded bodies, streamed answers
that clean up, and blocking iterators read off the event loop (see `skyward.server.app`)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from skyward.secrets import mask
from skyward.server.errors import RequestError
from skyward.server.limits import (
    HISTORY_THREADS,
    LIFECYCLE_THREADS,
    MAX_CALLS_ENV,
    MAX_JSON_BYTES,
    TRANSFER_THREADS,
    Limits,
)

T = TypeVar("T")


class TooBusy(RequestError):
    """More calls and runs in flight than the server's cap."""

    status = 429


class TooLarge(RequestError):
    status = 413


class TokenGuard:
    """Refuse (401) every HTTP request whose `Authorization` header is not `Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                response = JSONResponse(
                    {"error": "missing or wrong token: send 'Authorization: Bearer <token>' with the token "
                              "from the server's token file (~/.skyward/server/token)"},
                    status_code=401, headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Limiters:
    """Threads per kind of work: one kind waiting cannot hold up another (see `skyward.server.limits`)."""

    def __init__(self, limits: Limits) -> None:
        self.calls = anyio.CapacityLimiter(limits.max_calls)
        self.lifecycle = anyio.CapacityLimiter(LIFECYCLE_THREADS)
        self.transfers = anyio.CapacityLimiter(TRANSFER_THREADS)
        self.history = anyio.CapacityLimiter(HISTORY_THREADS)


class CallGate:
    """The calls and runs in flight, at most `cap`: one more is refused with 429 at once, its
    message saying how to raise the cap. Used on the event loop only (no lock needed)."""

    def __init__(self, cap: int) -> None:
        self.cap, self.active = cap, 0

    def enter(self) -> None:
        if self.active >= self.cap:
            raise TooBusy(
                f"the server already runs {self.active} calls and runs, its cap: retry when one ends, or "
                f"start the server with a higher cap ({MAX_CALLS_ENV}={self.cap * 2} sky server start)"
            )
        self.active += 1

    def leave(self) -> None:
        self.active -= 1


class ClosingStream(StreamingResponse):
    """A streamed answer whose `finally` callbacks run once it is sent, cut off, or never started
    (a generator that never started would not run its own `finally`)."""

    def __init__(self, content: Any, *, closing: list[Callable[[], None]], media_type: str) -> None:
        super().__init__(content, media_type=media_type)
        self.closing = closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            for close in self.closing:
                close()


def request_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestError)
    headers = {"Retry-After": "1"} if isinstance(error, TooBusy) else None
    return JSONResponse({"error": mask(str(error))}, status_code=error.status, headers=headers)


async def read_body(request: Request, limit: int, what: str) -> bytes:
    """The request's body, refused (413) past `limit` bytes before more than that is read."""
    declared = request.headers.get("content-length", "")
    too_large = TooLarge(f"{what} is over {limit >> 20} MiB, the server's limit")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: Request) -> dict[str, Any]:
    raw = await read_body(request, MAX_JSON_BYTES, "the request body")
    try:
        data = json.loads(raw)
    except ValueError:
        raise RequestError("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise RequestError("the request body must be a JSON object")
    return data


async def iterate(items: Iterator[T], limiter: anyio.CapacityLimiter) -> AsyncIterator[T]:
    """A blocking iterator's items, each `next` on a thread from `limiter`."""
    done: Any = object()
    try:
        while True:
            item = await anyio.to_thread.run_sync(next, items, done, limiter=limiter)
            if item is done:
                return
            yield item
    finally:
        close_soon(items)


def close_soon(items: Any) -> None:
    """Close a blocking iterator on a thread of its own (closing a remote stream may wait on the
    pool; the event loop must not)."""
    close = getattr(items, "close", None)
    if close is None:
        return

    def quietly() -> None:
        with contextlib.suppress(Exception):
            close()

    threading.Thread(target=quietly, name="skyward-close", daemon=True).start()


async def joined(thread: threading.Thread, timeout: float) -> None:
    """Wait for `thread` without holding one."""
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
