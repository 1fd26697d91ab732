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
import json
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from skyward._version import __version__
from skyward.secrets import mask
from skyward.server.dispatch import dispatch_async, dispatch_stream
from skyward.server.errors import NotFound, RequestError
from skyward.server.held import Cancel, Held
from skyward.server.http import (
    CallGate,
    ClosingStream,
    Limiters,
    TokenGuard,
    close_soon,
    iterate,
    joined,
    json_body,
    read_body,
    request_error,
)
from skyward.server.limits import (
    Limits,
)
from skyward.server.output import OutputBuffer
from skyward.server.pools import STOP_TIMEOUT, Pools
from skyward.server.redact import redact_json

#: How often idle pools are looked for.
REAP_INTERVAL = 5.0
#: How many events `sky compute view` shows.
VIEW_EVENTS = 20
#: The longest `GET /v1/pools/NAME?wait=` (seconds).
MAX_WAIT = 600.0



def create_app(pools: Pools, token: str, info: dict[str, Any], limits: Limits | None = None,
               on_stopped: Callable[[], None] | None = None) -> ASGIApp:
    """The app serving `pools`; `info` (pid, url, started...) is what `GET /v1/server` adds.
    `on_stopped` runs at the end of the lifespan's shutdown, after every pool has ended (the
    daemon's `server.json` is removed there: uvicorn re-raises a SIGTERM before its caller's
    `finally` could)."""
    api = Api(pools, info, limits or Limits(), on_stopped)
    routes = [
        Route("/v1/server", api.server_status, methods=["GET"]),
        Route("/v1/server/shutdown", api.shutdown, methods=["POST"]),
        Route("/v1/pools", api.list_pools, methods=["GET"]),
        Route("/v1/pools", api.create_pool, methods=["POST"]),
        Route("/v1/pools/{name}", api.get_pool, methods=["GET"]),
        Route("/v1/pools/{name}", api.delete_pool, methods=["DELETE"]),
        Route("/v1/pools/{name}/run", api.run_script, methods=["POST"]),
        Route("/v1/pools/{name}/runs", api.runs, methods=["GET"]),
        Route("/v1/pools/{name}/call", api.call, methods=["POST"]),
        Route("/v1/pools/{name}/events", api.events, methods=["GET"]),
        Route("/v1/pools/{name}/history", api.history, methods=["GET"]),
        Route("/v1/pools/{name}/view", api.view, methods=["GET"]),
        Route("/v1/pools/{name}/files", api.upload, methods=["PUT"]),
        Route("/v1/pools/{name}/files", api.download, methods=["GET"]),
    ]
    # A refused request raises RequestError anywhere below a route; this one handler answers it.
    app = Starlette(routes=routes, lifespan=contextlib.asynccontextmanager(api.lifespan),
                    exception_handlers={RequestError: request_error})
    guarded = TokenGuard(app, token)
    guarded.starlette = app  # type: ignore[attr-defined] - where the daemon puts the uvicorn server
    return guarded


@contextlib.contextmanager
def _callers_error() -> Iterator[None]:
    """A failure of what the caller asked a node for (a path it cannot read or write) is the
    caller's error (400 with its message), as a refused request already is."""
    try:
        yield
    except RequestError:
        raise
    except Exception as error:  # noqa: BLE001 - told to the caller
        raise RequestError(f"{type(error).__name__}: {error}") from None


class Api:
    """The routes' handlers, over one server's pools, limits and call gate."""

    def __init__(self, pools: Pools, info: dict[str, Any], limits: Limits,
                 on_stopped: Callable[[], None] | None) -> None:
        self.pools, self.info, self.limits, self.on_stopped = pools, info, limits, on_stopped
        self.limiters = Limiters(limits)
        self.gate = CallGate(limits.max_calls)

    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        pools, lifecycle = self.pools, self.limiters.lifecycle
        self.info["restored"] = await anyio.to_thread.run_sync(pools.restore, limiter=lifecycle)
        reaper = asyncio.create_task(_reap(pools, lifecycle))
        try:
            yield
        finally:
            reaper.cancel()
            try:
                await anyio.to_thread.run_sync(pools.close, limiter=lifecycle)
            finally:
                if self.on_stopped is not None:
                    self.on_stopped()

    async def server_status(self, request: Request) -> Response:
        pools, gate = self.pools, self.gate
        return JSONResponse({
            **self.info, "version": __version__, "pid": os.getpid(), "pools": len(pools.list()),
            "idle_timeout": pools.idle_timeout, "calls": {"running": gate.active, "cap": gate.cap},
            "store": {"commits": pools.store.commits},
        })

    async def shutdown(self, request: Request) -> Response:
        server = getattr(request.app.state, "server", None)
        if server is not None:
            server.should_exit = True
        return JSONResponse({"stopping": True})

    async def list_pools(self, request: Request) -> Response:
        return JSONResponse({"pools": self.pools.list()})

    async def create_pool(self, request: Request) -> Response:
        data = await json_body(request)
        name, config = data.get("name"), data.get("config", {})
        if not isinstance(name, str) or not isinstance(config, dict):
            raise RequestError('send {"name": "<pool>", "config": {<pool table>}}')
        created = await anyio.to_thread.run_sync(self.pools.create, name, config,
                                                 limiter=self.limiters.lifecycle)
        return JSONResponse(created, status_code=202)

    async def get_pool(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            wait = min(float(request.query_params.get("wait", "0")), MAX_WAIT)
        except ValueError:
            raise RequestError("wait= takes seconds, e.g. ?wait=30") from None
        deadline = time.monotonic() + wait
        while not self.pools.started(name) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # no thread held while a pool starts
        return JSONResponse(self.pools.get(name))

    async def delete_pool(self, request: Request) -> Response:
        name = request.path_params["name"]
        stopping = await anyio.to_thread.run_sync(lambda: self.pools.delete(name, wait=False),
                                                  limiter=self.limiters.lifecycle)
        await joined(stopping, STOP_TIMEOUT)
        return JSONResponse({"deleted": name})

    async def call(self, request: Request) -> Response:
        name, pools, gate, calls = request.path_params["name"], self.pools, self.gate, self.limiters.calls
        gate.enter()
        streamed = False
        try:
            data = await read_body(request, self.limits.max_call_bytes, "the call's pickle")
            if request.query_params.get("stream") == "1":
                frames = await anyio.to_thread.run_sync(dispatch_stream, pools, name, data, limiter=calls)
                streamed = True
                closing = [gate.leave, lambda: close_soon(frames)]
                return ClosingStream(iterate(frames, calls), closing=closing,
                                     media_type="application/octet-stream")
            answer = await dispatch_async(pools, name, data, calls)
            return Response(answer, media_type="application/octet-stream")
        finally:
            if not streamed:
                gate.leave()

    async def events(self, request: Request) -> Response:
        feed = self.pools.feed(request.path_params["name"])
        return StreamingResponse(feed.frames(), media_type="application/octet-stream")

    async def _read_history(self, name: str, runs: bool, events: int | None) -> tuple[list[Any], list[Any]]:
        store = self.pools.store

        def read() -> tuple[list[Any], list[Any]]:
            return (store.runs(name) if runs else [], store.events(name, limit=events) if events != 0 else [])

        runs_, events_ = await anyio.to_thread.run_sync(read, limiter=self.limiters.history)
        return redact_json(runs_), redact_json(events_)

    async def runs(self, request: Request) -> Response:
        name = request.path_params["name"]
        found, _ = await self._read_history(name, runs=True, events=0)
        return JSONResponse({"pool": name, "runs": found})

    async def view(self, request: Request) -> Response:
        name = request.path_params["name"]
        described, metrics = self.pools.get(name), self.pools.metrics(name)
        _, last = await self._read_history(name, runs=False, events=VIEW_EVENTS)
        return JSONResponse({"pool": described, "metrics": metrics, "events": last})

    async def history(self, request: Request) -> Response:
        name = request.path_params["name"]
        try:
            held: dict[str, Any] | None = self.pools.get(name)
        except RequestError:
            held = None  # deleted: its runs and events remain
        runs_, events_ = await self._read_history(name, runs=True, events=None)
        if held is None and not runs_ and not events_:
            raise NotFound(f"the server has no history of a pool {name!r}")
        return JSONResponse({"name": name, "pool": held, "runs": runs_, "events": events_})

    async def upload(self, request: Request) -> Response:
        name, query, transfers = request.path_params["name"], request.query_params, self.limiters.transfers
        node, destination = query.get("node", "head"), query.get("destination", ".")
        self.pools.targets(name, node)  # the pool and node are checked before a byte is spooled
        with self.pools.in_use(name):  # a long upload is use: the reaper leaves the pool
            spool = await anyio.to_thread.run_sync(_spool_file, limiter=transfers)
            try:
                with _callers_error():
                    with spool:
                        # Spooled to a file as it arrives (never whole in memory), then streamed on.
                        async for chunk in request.stream():
                            await anyio.to_thread.run_sync(spool.write, chunk, limiter=transfers)
                    written = await anyio.to_thread.run_sync(self.pools.upload, name, node, spool.name,
                                                             destination, limiter=transfers)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(spool.name)
        return JSONResponse({"written": written})

    async def download(self, request: Request) -> Response:
        name, query, transfers = request.path_params["name"], request.query_params, self.limiters.transfers
        node, path = query.get("node", "head"), query.get("path", "")
        with _callers_error():
            chunks = await anyio.to_thread.run_sync(self.pools.download, name, node, path, limiter=transfers)
        return ClosingStream(iterate(chunks, transfers), closing=[lambda: close_soon(chunks)],
                             media_type="application/gzip")

    async def run_script(self, request: Request) -> Response:
        name, pools, gate = request.path_params["name"], self.pools, self.gate
        gate.enter()
        try:
            data = await json_body(request)
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
