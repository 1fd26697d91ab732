"""The pool server's HTTP API: a Starlette app, every route behind the bearer token.

Routes (JSON in and out; errors are `{"error": "..."}` with a 4xx status):

- `GET /v1/server`: the server's pid, version, URL, how many pools it holds, and what it took up
  again at start (`restored`: the pools it adopted and ended, see `Pools.restore`);
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
a request without `Authorization: Bearer <token>` (compared in constant time) gets 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import tempfile
import threading
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from skyward._version import __version__
from skyward.server.dispatch import dispatch, dispatch_stream
from skyward.server.pools import Cancel, NotFound, Pools, RequestError

#: How often idle pools are looked for.
REAP_INTERVAL = 5.0


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


def _error(error: RequestError) -> JSONResponse:
    return JSONResponse({"error": str(error)}, status_code=error.status)


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = await request.json()
    except ValueError:
        raise RequestError("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise RequestError("the request body must be a JSON object")
    return data


def create_app(pools: Pools, token: str, info: dict[str, Any]) -> ASGIApp:
    """The app serving `pools`; `info` (pid, url, started...) is what `GET /v1/server` adds."""

    async def server_status(request: Request) -> Response:
        return JSONResponse({**info, "version": __version__, "pid": os.getpid(), "pools": len(pools.list()),
                             "idle_timeout": pools.idle_timeout})

    async def shutdown(request: Request) -> Response:
        server = getattr(request.app.state, "server", None)
        if server is not None:
            server.should_exit = True
        return JSONResponse({"stopping": True})

    async def list_pools(request: Request) -> Response:
        return JSONResponse({"pools": pools.list()})

    async def create_pool(request: Request) -> Response:
        try:
            data = await _body(request)
            name, config = data.get("name"), data.get("config", {})
            if not isinstance(name, str) or not isinstance(config, dict):
                raise RequestError('send {"name": "<pool>", "config": {<pool table>}}')
            created = await run_in_threadpool(pools.create, name, config)
        except RequestError as error:
            return _error(error)
        return JSONResponse(created, status_code=202)

    async def get_pool(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            wait = float(request.query_params.get("wait", "0"))
            if wait > 0:
                return JSONResponse(await run_in_threadpool(pools.wait_ready, name, min(wait, 600.0)))
            return JSONResponse(pools.get(name))
        except ValueError:
            return _error(RequestError("wait= takes seconds, e.g. ?wait=30"))
        except RequestError as error:
            return _error(error)

    async def delete_pool(request: Request) -> Response:
        try:
            await run_in_threadpool(pools.delete, request.path_params["name"])
        except RequestError as error:
            return _error(error)
        return JSONResponse({"deleted": request.path_params["name"]})

    async def call(request: Request) -> Response:
        try:
            data = await request.body()
            if request.query_params.get("stream") == "1":
                frames = await run_in_threadpool(dispatch_stream, pools, request.path_params["name"], data)
                return StreamingResponse(frames, media_type="application/octet-stream")
            answer = await run_in_threadpool(dispatch, pools, request.path_params["name"], data)
        except RequestError as error:
            return _error(error)
        return Response(answer, media_type="application/octet-stream")

    async def events(request: Request) -> Response:
        try:
            feed = pools.feed(request.path_params["name"])
        except RequestError as error:
            return _error(error)
        return StreamingResponse(feed.frames(), media_type="application/octet-stream")

    async def runs(request: Request) -> Response:
        name = request.path_params["name"]
        return JSONResponse({"pool": name, "runs": pools.store.runs(name)})

    async def view(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            described = pools.get(name)
            metrics = pools.metrics(name)
        except RequestError as error:
            return _error(error)
        return JSONResponse({"pool": described, "metrics": metrics, "events": pools.store.events(name)[-20:]})

    async def upload(request: Request) -> Response:
        name, query = request.path_params["name"], request.query_params
        # The archive is spooled to a file as it arrives (never whole in memory), then streamed on.
        spool = tempfile.NamedTemporaryFile(prefix="skyward-upload-", suffix=".tar.gz", delete=False)
        try:
            with spool:
                async for chunk in request.stream():
                    await run_in_threadpool(spool.write, chunk)
            written = await run_in_threadpool(pools.upload, name, query.get("node", "head"), spool.name,
                                              query.get("destination", "."))
        except RequestError as error:
            return _error(error)
        except Exception as error:  # noqa: BLE001 - a path the node cannot write is the caller's error
            return _error(RequestError(f"{type(error).__name__}: {error}"))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(spool.name)
        return JSONResponse({"written": written})

    async def download(request: Request) -> Response:
        name, query = request.path_params["name"], request.query_params
        try:
            node, path = query.get("node", "head"), query.get("path", "")
            chunks = await run_in_threadpool(pools.download, name, node, path)
        except RequestError as error:
            return _error(error)
        except Exception as error:  # noqa: BLE001 - a missing path on the node is the caller's error
            return _error(RequestError(f"{type(error).__name__}: {error}"))
        return StreamingResponse(chunks, media_type="application/gzip")

    async def history(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            held: dict[str, Any] | None = pools.get(name)
        except RequestError:
            held = None  # deleted: its runs and events remain
        runs_, events = pools.store.runs(name), pools.store.events(name)
        if held is None and not runs_ and not events:
            return _error(NotFound(f"the server has no history of a pool {name!r}"))
        return JSONResponse({"name": name, "pool": held, "runs": runs_, "events": events})

    async def run_script(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            data = await _body(request)
            script, source = data.get("script"), data.get("source")
            argv, node = data.get("argv", []), str(data.get("node", "head"))
            if not isinstance(script, str) or not isinstance(source, str) or not isinstance(argv, list):
                raise RequestError('send {"script": "<file name>", "source": "<its text>", "argv": [...]}')
            held, targets = pools.targets(name, node)
        except RequestError as error:
            return _error(error)
        record = pools.store.run_started(name, script, [str(a) for a in argv], node)
        stream = _run_stream(pools, held, targets, script, source, [str(a) for a in argv], record)
        return StreamingResponse(stream, media_type="application/x-ndjson")

    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        info["restored"] = await run_in_threadpool(pools.restore)
        reaper = asyncio.create_task(_reap(pools))
        try:
            yield
        finally:
            reaper.cancel()
            await run_in_threadpool(pools.close)

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
    app = Starlette(routes=routes, lifespan=contextlib.asynccontextmanager(lifespan))
    guarded = TokenGuard(app, token)
    guarded.starlette = app  # type: ignore[attr-defined] - where the daemon puts the uvicorn server
    return guarded


async def _reap(pools: Pools) -> None:
    interval = min(REAP_INTERVAL, (pools.idle_timeout or REAP_INTERVAL) / 2)
    while True:
        await asyncio.sleep(interval)
        await run_in_threadpool(pools.reap_idle)


async def _run_stream(
    pools: Pools, held: Any, targets: list[int | str], script: str, source: str, argv: list[str], record: int
) -> AsyncIterator[bytes]:
    """The script's output on every target node as JSON lines, as it comes, then the exit code."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()
    cancel = Cancel()

    def pump(target: int | str) -> None:
        label = "0" if target == "head" else str(target)
        put = lambda *item: loop.call_soon_threadsafe(queue.put_nowait, item)  # noqa: E731
        try:
            for stream, value in pools.run(held, target, script, source, argv, cancel):
                put(label, stream, value)
        except BaseException as error:  # noqa: BLE001 - the node's failure is the run's, told to the client
            why = f"{type(error).__name__}: {error}"
            put(label, "failed", f"skyward: the run failed on node {label}: {why}\n")
        finally:
            put(label, "done", None)

    for target in targets:
        threading.Thread(target=pump, args=(target,), name=f"skyward-run-{held.name}", daemon=True).start()
    remaining, codes = len(targets), {}
    try:
        while remaining:
            node, stream, value = await queue.get()
            if stream == "done":
                remaining -= 1
                codes.setdefault(node, 1)  # a node that never said its exit code failed
            elif stream == "exit":
                codes[node] = int(value)
            else:
                kind = "stderr" if stream == "failed" else stream
                if stream == "failed":
                    codes[node] = 1
                yield (json.dumps({"node": int(node), "stream": kind, "data": value}) + "\n").encode()
        ordered = dict(sorted(codes.items(), key=lambda item: int(item[0])))
        code = next((c for c in ordered.values() if c), 0)
        await run_in_threadpool(pools.store.run_ended, record, code)
        yield (json.dumps({"exit": code, "codes": ordered}) + "\n").encode()
    finally:
        cancel.set()
