"""The pool server: a long-lived local process that holds warm pools for scripts, notebooks and agents.

`sky server start` runs it (a daemon unless `--foreground`), `sky compute ...` talks to it. The parts:

- `daemon`: serving in this process, or spawning and stopping a daemon;
- `app`: the HTTP API, behind the bearer token;
- `pools`: the `sky.Compute` pools it holds, started and ended on threads;
- `script`: the task that runs a script on a node as `__main__`, its output streamed;
- `store`: what it holds, in SQLite, for the next start.

A client's side is in `skyward/client/`, as it is what scripts and the CLI use and the server
builds on the client (never the reverse): `server_home` (the server's files under
`~/.skyward/server/`: token, `server.json`, log, database; and how a client finds the server and
its token), `server_api` (the standard-library HTTP client) and `attach` (`sky.Compute(name=...)`
attaching to a pool the server holds).

Why Starlette and uvicorn: the server needs a small HTTP API with one streamed response (a run's
output) on an asyncio loop, next to pools that live on threads. Starlette is the ASGI toolkit
FastAPI itself is built on, small (one pure-Python package plus anyio), with `StreamingResponse`
and a lifespan hook for ending pools at shutdown; it is maintained by the Encode team that also
keeps uvicorn, the most used ASGI server, which binds to a socket we open ourselves (so port 0
works and the port written down is the real one) and turns SIGTERM into a graceful shutdown.
FastAPI would add pydantic and request models the handful of routes here do not need; aiohttp
would bring its own server and loop conventions instead of the standard ASGI ones.

Nothing here is imported by `import skyward`: only the `sky server` and `sky compute` commands
load it, and the client side needs only the standard library (and cloudpickle, to attach).
"""
