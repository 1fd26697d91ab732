"""The pool server's HTTP API: a Starlette app, every route behind the bearer token.

Routes (JSON in and out; errors are `{"error": "..."}` with a 4xx status):

- `GET /v1/server`: the server's pid, version, URL, how many pools it holds, its limits, and what
  it took up again at start (`restored`: the pools it adopted, ended or could not restore, see
  `Pools.restore`);
- `POST /v1/server/shutdown`: stop (every pool is ended first);
- `GET /v1/pools`, `POST /v1/pools` (`{"name", "config"}`: a pool table), `GET /v1/pools/NAME`
  (`?wait=SECONDS` waits for a starting pool), `DELETE /v1/pools/NAME`;
- `POST /v1/pools/NAME/run` (`{"script", "source", "argv", "node"}`): a streamed response of JSON
  lines, `{"node", "stream": "stdout" | "stderr", "data"}` as the script prints, and last
  `{"exit": CODE, "codes": {node: code}}`;
- `GET /v1/pools/NAME/runs`: the runs the server recorded for the pool;
- `GET /v1/pools/NAME/history`: the pool (while held), its runs and its events (`sky log NAME`),
  also after it was deleted;
- `GET /v1/pools/NAME/view`: the pool, its nodes' latest metric samples and its last 20 events
  (`sky compute view`);
- `PUT /v1/pools/NAME/files?destination=D&node=N` (a tar.gz body, spooled to a file) and
  `GET /v1/pools/NAME/files?path=P&node=N` (a tar.gz answer, streamed): `sky compute upload|download`;
- `POST /v1/pools/NAME/call`: one dispatch of an attached Python client, a pickle in and out
  (`skyward.server.dispatch`).
- `GET /v1/pools/NAME/events`: the pool's live events as pickled frames, for an attached client's
  `pool.on` (`skyward.server.feed`).

The token check is a plain ASGI middleware in front of every route, so no route can forget it:
a request without `Authorization: Bearer <token>` (compared in constant time) gets 401. A refused
request raises `RequestError`, which one exception handler turns into its status and message.

No secret leaves in an answer: a pool's table is shown with its secrets masked, and every string
of the history and of a run's output is masked by value (`skyward.server.redact`).

What blocks runs on threads of its kind's own limiter, calls and runs in flight are capped (429
past the cap), bodies are bounded: see `skyward.server.limits`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from skyward._version import __version__
from skyward.secrets import mask
from skyward.server.dispatch import dispatch_async, dispatch_stream
from skyward.server.limits import (
    HISTORY_THREADS,
    LIFECYCLE_THREADS,
    MAX_CALLS_ENV,
    MAX_JSON_BYTES,
    TRANSFER_THREADS,
    Limits,
)
from skyward.server.output import OutputBuffer
from skyward.server.pools import STOP_TIMEOUT, Cancel, Held, NotFound, Pools, RequestError
from skyward.server.redact import redact_json

#: How often idle pools are looked for.
REAP_INTERVAL = 5.0
#: How many events `sky compute view` shows.
VIEW_EVENTS = 20
#: The longest `GET /v1/pools/NAME?wait=` (seconds).
MAX_WAIT = 600.0

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


def _request_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestError)
    headers = {"Retry-After": "1"} if isinstance(error, TooBusy) else None
    return JSONResponse({"error": mask(str(error))}, status_code=error.status, headers=headers)


async def _read(request: Request, limit: int, what: str) -> bytes:
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


async def _body(request: Request) -> dict[str, Any]:
    raw = await _read(request, MAX_JSON_BYTES, "the request body")
    try:
        data = json.loads(raw)
    except ValueError:
        raise RequestError("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise RequestError("the request body must be a JSON object")
    return data


async def _iterate(items: Iterator[T], limiter: anyio.CapacityLimiter) -> AsyncIterator[T]:
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


async def _joined(thread: threading.Thread, timeout: float) -> None:
    """Wait for `thread` without holding one."""
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)


def create_app(pools: Pools, token: str, info: dict[str, Any], limits: Limits | None = None,
               on_stopped: Callable[[], None] | None = None) -> ASGIApp:
    """The app serving `pools`; `info` (pid, url, started...) is what `GET /v1/server` adds.
    `on_stopped` runs at the end of the lifespan's shutdown, after every pool has ended (the
    daemon's `server.json` is removed there: uvicorn re-raises a SIGTERM before its caller's
    `finally` could)."""
    limits = limits or Limits()
    limiters = Limiters(limits)
    gate = CallGate(limits.max_calls)

    async def server_status(request: Request) -> Response:
        return JSONResponse({
            **info, "version": __version__, "pid": os.getpid(), "pools": len(pools.list()),
            "idle_timeout": pools.idle_timeout, "calls": {"running": gate.active, "cap": gate.cap},
            "store": {"commits": pools.store.commits},
        })

    async def shutdown(request: Request) -> Response:
        server = getattr(request.app.state, "server", None)
        if server is not None:
            server.should_exit = True
        return JSONResponse({"stopping": True})

    async def list_pools(request: Request) -> Response:
        return JSONResponse({"pools": pools.list()})

    async def create_pool(request: Request) -> Response:
        data = await _body(request)
        name, config = data.get("name"), data.get("config", {})
        if not isinstance(name, str) or not isinstance(config, dict):
            raise RequestError('send {"name": "<pool>", "config": {<pool table>}}')
        created = await anyio.to_thread.run_sync(pools.create, name, config, limiter=limiters.lifecycle)
        return JSONResponse(created, status_code=202)

    async def get_pool(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            wait = min(float(request.query_params.get("wait", "0")), MAX_WAIT)
        except ValueError:
            raise RequestError("wait= takes seconds, e.g. ?wait=30") from None
        deadline = time.monotonic() + wait
        while not pools.started(name) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # no thread held while a pool starts
        return JSONResponse(pools.get(name))

    async def delete_pool(request: Request) -> Response:
        name = request.path_params["name"]
        stopping = await anyio.to_thread.run_sync(lambda: pools.delete(name, wait=False),
                                                  limiter=limiters.lifecycle)
        await _joined(stopping, STOP_TIMEOUT)
        return JSONResponse({"deleted": name})

    async def call(request: Request) -> Response:
        name = request.path_params["name"]
        gate.enter()
        streamed = False
        try:
            data = await _read(request, limits.max_call_bytes, "the call's pickle")
            if request.query_params.get("stream") == "1":
                frames = await anyio.to_thread.run_sync(dispatch_stream, pools, name, data,
                                                        limiter=limiters.calls)
                streamed = True
                return ClosingStream(_iterate(frames, limiters.calls),
                                     closing=[gate.leave, lambda: close_soon(frames)],
                                     media_type="application/octet-stream")
            answer = await dispatch_async(pools, name, data, limiters.calls)
            return Response(answer, media_type="application/octet-stream")
        finally:
            if not streamed:
                gate.leave()

    async def events(request: Request) -> Response:
        feed = pools.feed(request.path_params["name"])
        return StreamingResponse(feed.frames(), media_type="application/octet-stream")

    async def read_history(name: str, runs: bool, events: int | None) -> tuple[list[Any], list[Any]]:
        def read() -> tuple[list[Any], list[Any]]:
            return (pools.store.runs(name) if runs else [],
                    pools.store.events(name, limit=events) if events != 0 else [])

        runs_, events_ = await anyio.to_thread.run_sync(read, limiter=limiters.history)
        return redact_json(runs_), redact_json(events_)

    async def runs(request: Request) -> Response:
        name = request.path_params["name"]
        found, _ = await read_history(name, runs=True, events=0)
        return JSONResponse({"pool": name, "runs": found})

    async def view(request: Request) -> Response:
        name = request.path_params["name"]
        described, metrics = pools.get(name), pools.metrics(name)
        _, last = await read_history(name, runs=False, events=VIEW_EVENTS)
        return JSONResponse({"pool": described, "metrics": metrics, "events": last})

    async def history(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            held: dict[str, Any] | None = pools.get(name)
        except RequestError:
            held = None  # deleted: its runs and events remain
        runs_, events_ = await read_history(name, runs=True, events=None)
        if held is None and not runs_ and not events_:
            raise NotFound(f"the server has no history of a pool {name!r}")
        return JSONResponse({"name": name, "pool": held, "runs": runs_, "events": events_})

    async def upload(request: Request) -> Response:
        name, query = request.path_params["name"], request.query_params
        node, destination = query.get("node", "head"), query.get("destination", ".")
        pools.targets(name, node)  # the pool and node are checked before a byte is spooled
        with pools.in_use(name):  # a long upload is use: the reaper leaves the pool
            spool = await anyio.to_thread.run_sync(_spool_file, limiter=limiters.transfers)
            try:
                with spool:
                    # Spooled to a file as it arrives (never whole in memory), then streamed on.
                    async for chunk in request.stream():
                        await anyio.to_thread.run_sync(spool.write, chunk, limiter=limiters.transfers)
                written = await anyio.to_thread.run_sync(pools.upload, name, node, spool.name, destination,
                                                         limiter=limiters.transfers)
            except RequestError:
                raise
            except Exception as error:  # noqa: BLE001 - a path the node cannot write is the caller's error
                raise RequestError(f"{type(error).__name__}: {error}") from None
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(spool.name)
        return JSONResponse({"written": written})

    async def download(request: Request) -> Response:
        name, query = request.path_params["name"], request.query_params
        node, path = query.get("node", "head"), query.get("path", "")
        try:
            chunks = await anyio.to_thread.run_sync(pools.download, name, node, path,
                                                    limiter=limiters.transfers)
        except RequestError:
            raise
        except Exception as error:  # noqa: BLE001 - a missing path on the node is the caller's error
            raise RequestError(f"{type(error).__name__}: {error}") from None
        return ClosingStream(_iterate(chunks, limiters.transfers), closing=[lambda: close_soon(chunks)],
                             media_type="application/gzip")

    async def run_script(request: Request) -> Response:
        name = request.path_params["name"]
        gate.enter()
        try:
            data = await _body(request)
            script, source = data.get("script"), data.get("source")
            argv, node = data.get("argv", []), str(data.get("node", "head"))
            if not isinstance(script, str) or not isinstance(source, str) or not isinstance(argv, list):
                raise RequestError('send {"script": "<file name>", "source": "<its text>", "argv": [...]}')
            held, targets = pools.targets(name, node)
        except BaseException:
            gate.leave()
            raise
        argv = [str(a) for a in argv]
        record = pools.store.run_started(name, script, [mask(a, held.masked) for a in argv], node)
        stream = _run_stream(pools, held, targets, script, source, argv, record)
        return ClosingStream(stream, closing=[gate.leave], media_type="application/x-ndjson")

    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        info["restored"] = await anyio.to_thread.run_sync(pools.restore, limiter=limiters.lifecycle)
        reaper = asyncio.create_task(_reap(pools, limiters.lifecycle))
        try:
            yield
        finally:
            reaper.cancel()
            try:
                await anyio.to_thread.run_sync(pools.close, limiter=limiters.lifecycle)
            finally:
                if on_stopped is not None:
                    on_stopped()

    routes = [
        Route("/v1/server", server_status, methods=["GET"]),
        Route("/v1/server/shutdown", shutdown, methods=["POST"]),
        Route("/v1/pools", list_pools, methods=["GET"]),
        Route("/v1/pools", create_pool, methods=["POST"]),
        Route("/v1/pools/{name}", get_pool, methods=["GET"]),
        Route("/v1/pools/{name}", delete_pool, methods=["DELETE"]),
        Route("/v1/pools/{name}/run", run_script, methods=["POST"]),
        Route("/v1/pools/{name}/runs", runs, methods=["GET"]),
        Route("/v1/pools/{name}/call", call, methods=["POST"]),
        Route("/v1/pools/{name}/events", events, methods=["GET"]),
        Route("/v1/pools/{name}/history", history, methods=["GET"]),
        Route("/v1/pools/{name}/view", view, methods=["GET"]),
        Route("/v1/pools/{name}/files", upload, methods=["PUT"]),
        Route("/v1/pools/{name}/files", download, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=contextlib.asynccontextmanager(lifespan),
                    exception_handlers={RequestError: _request_error})
    guarded = TokenGuard(app, token)
    guarded.starlette = app  # type: ignore[attr-defined] - where the daemon puts the uvicorn server
    return guarded


def _spool_file() -> Any:
    return tempfile.NamedTemporaryFile(prefix="skyward-upload-", suffix=".tar.gz", delete=False)


async def _reap(pools: Pools, limiter: anyio.CapacityLimiter | None = None) -> None:
    """End idle pools every few seconds, for the server's whole life: a failure is logged, and the
    next round comes as usual (a reaper that died would leave idle cloud machines running)."""
    interval = min(REAP_INTERVAL, (pools.idle_timeout or REAP_INTERVAL) / 2)
    while True:
        await asyncio.sleep(interval)
        try:
            await anyio.to_thread.run_sync(pools.reap_idle, limiter=limiter)
        except Exception as error:  # noqa: BLE001 - logged; the reaper goes on
            why = mask(f"{type(error).__name__}: {error}")
            structlog.get_logger().error("skyward.server_reap_failed", error=why)


async def _run_stream(
    pools: Pools, held: Held, targets: list[int | str], script: str, source: str, argv: list[str], record: int
) -> AsyncIterator[bytes]:
    """The script's output on every target node as JSON lines, as it comes (masked: no secret of
    the pool leaves), then the exit code. Between the nodes and the client a bounded buffer: a slow
    client loses output past it, never holds a node back (`skyward.server.output`)."""
    buffer = OutputBuffer()
    cancel = Cancel()

    def pump(target: int | str) -> None:
        label = "0" if target == "head" else str(target)
        try:
            for stream, value in pools.run(held, target, script, source, argv, cancel):
                buffer.put(label, stream, value)
        except BaseException as error:  # noqa: BLE001 - the node's failure is the run's, told to the client
            why = f"{type(error).__name__}: {error}"
            buffer.put(label, "failed", f"skyward: the run failed on node {label}: {why}\n")
        finally:
            buffer.put(label, "done", None)

    for target in targets:
        threading.Thread(target=pump, args=(target,), name=f"skyward-run-{held.name}", daemon=True).start()
    remaining, codes = len(targets), {}
    try:
        while remaining:
            node, stream, value = await buffer.get()
            if stream == "done":
                remaining -= 1
                codes.setdefault(node, 1)  # a node that never said its exit code failed
            elif stream == "exit":
                codes[node] = int(value)
            else:
                kind = "stderr" if stream == "failed" else stream
                if stream == "failed":
                    codes[node] = 1
                data = mask(str(value), held.masked)
                yield (json.dumps({"node": int(node), "stream": kind, "data": data}) + "\n").encode()
        ordered = dict(sorted(codes.items(), key=lambda item: int(item[0])))
        code = next((c for c in ordered.values() if c), 0)
        pools.store.run_ended(record, code)
        yield (json.dumps({"exit": code, "codes": ordered}) + "\n").encode()
    finally:
        cancel.set()
