"""The pools a server holds: real `sky.Compute` pools, started, used and ended off the event loop.

A pool is built from a *pool table*: the same table a `[pools.NAME]` of skyward.toml is (with
`[defaults]` laid under it and a named provider replaced by its table; `sky compute create` sends
it), turned into a `Spec` and `Options` by `skyward.config_records.build_pool`, so a pool made by
the server equals the one `sky.Compute(name=NAME)` makes in a script. The console is turned off:
nobody watches the server's terminal.

The pool API is synchronous and a pool's start takes from a second (Local) to minutes (a cloud),
so each start and stop runs on a thread of its own and the HTTP handlers only read the `Held`
record: `state` goes starting -> ready (or failed) -> stopping, then the record is gone. A script
run (`run`) is a generator task (`skyward.server.script`) whose items are the script's output; one
script runs on a node at a time (`sys.argv` is the worker's, see that module).

Every change is written to the store first (`skyward.server.store`), so a server that dies leaves
a row for every pool that may own machines; `restore` reads them at the next start. The row keeps
the pool's table with its secrets replaced by references to the server's environment, and every
answer shows the table with its secrets masked (`skyward.server.redact`); the table as sent lives
in memory only, for as long as the pool is held.

A pool is *in use* while a run, a call or a file transfer is under way (`Held.busy`): the idle
reaper (`reap_idle`) ends only pools that nothing uses, so a long upload is never cut off.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs
import structlog

from skyward.client.pool import Pool
from skyward.config_records import build_pool
from skyward.errors import SkywardError
from skyward.function import function
from skyward.observe.bus import redact
from skyward.observe.events import Event, Log, Metric, TaskCompleted
from skyward.secrets import mask, register_secret
from skyward.server.errors import Conflict, NotFound, RequestError
from skyward.server.feed import EventFeed
from skyward.server.files import file_chunks, pack_chunks, unpack_chunks
from skyward.server.held import Cancel, Held, InUse, provider_name
from skyward.server.redact import (
    MissingSecret,
    find_secrets,
    redact_json,
    resolve,
    secret_values,
    stored_form,
)
from skyward.server.script import run_script
from skyward.server.store import Store

#: How long `close` waits for each pool to end before giving up on it.
STOP_TIMEOUT = 600.0
#: The providers whose pools a restarted server starts again on the same machines (see `restore`).
ADOPTABLE = ("local", "ssh")
#: Events kept as counts in the history, not one row each (see `skyward.server.store`): a task's,
#: and a bootstrap's output lines.
COUNTED = ("TaskStarted", "TaskCompleted", "TaskRetried", "BootstrapConsole")


def build(name: str, config: dict[str, Any], pool_id: str | None = None) -> Pool:
    """The pool of `config` (a pool table), named `name`, not started; bad tables raise RequestError.
    `pool_id`: the id of a pool started again on its machines (else the pool makes a new one)."""
    where = f"pool {name!r}"
    try:
        spec, options = build_pool(dict(config), where)
    except SkywardError as error:
        raise RequestError(mask(str(error))) from None
    return Pool(spec, options=attrs.evolve(options, console=False), label=name, pool_id=pool_id)


def end_machines(name: str, config: dict[str, Any]) -> None:
    """End the machines a dead server's pool left, through its provider's sweeper; `name` is what
    they are marked with: the pool's id (its name, for a pool of an older server)."""
    from skyward.extension import registry

    log = structlog.get_logger()
    kind = provider_name(config)
    provider = config.get("provider")
    region = provider.get("region") if isinstance(provider, dict) else None
    for _distribution, answer in registry.answers("skyward_sweepers"):
        for sweeper in answer if isinstance(answer, list | tuple) else [answer]:
            if str(getattr(sweeper, "name", "")).lower() != kind:
                continue
            try:
                machines = [m for m in sweeper.machines(region) if m.pool == name]
                report = sweeper.end(machines, {name}, region)
                log.info("skyward.server_pool_swept", pool=name, ended=len(report.ended),
                         failed=len(report.failed))
            except Exception as error:  # noqa: BLE001 - the guardians end them after ttl anyway
                log.warning("skyward.server_sweep_failed", pool=name, error=mask(str(error)))


class Pools:
    """Every pool the server holds, by name."""

    def __init__(self, store: Store, idle_timeout: float | None = None) -> None:
        self.store = store
        self.idle_timeout = idle_timeout
        self._held: dict[str, Held] = {}
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------------------

    def create(self, name: str, config: dict[str, Any], pool_id: str | None = None) -> dict[str, Any]:
        """Start a pool called `name` on a thread; returns at once with its state "starting".

        A reference in `config` (`{"from_env": "HF_TOKEN"}`) is resolved from the server's
        environment first. The secrets of the table are registered (masked in every text this
        process writes), and the database gets the table with references in their place."""
        if not name or not name.replace("-", "").replace("_", "").isalnum():
            raise RequestError(f"{name!r} is not a pool name: use letters, digits, '-' and '_'")
        try:
            config = resolve(name, config, os.environ)
        except MissingSecret as error:
            raise RequestError(str(error)) from None
        secrets = find_secrets(config)
        for value in secret_values(secrets):
            register_secret(value)
        pool = build(name, config, pool_id)  # a mistake in the table is the request's error, not the thread's
        with self._lock:
            if name in self._held:
                raise Conflict(f"the server already holds a pool {name!r}; delete it first, or pick another")
            held = self._held[name] = Held(name, config, secrets=secrets)
        self.store.put_pool(name, stored_form(name, config, secrets, os.environ), "starting", pool.id)
        starter = threading.Thread(target=self._start, args=(held, pool), name=f"skyward-start-{name}",
                                   daemon=True)
        starter.start()
        return held.describe()

    def _start(self, held: Held, pool: Pool) -> None:
        log = structlog.get_logger()
        try:
            held.pool = pool
            pool.on(Event, lambda event: self._record(held, event))
            pool.start()
        except BaseException as error:  # noqa: BLE001 - a failed start is the pool's state, shown to clients
            held.state, held.error = "failed", mask(f"{type(error).__name__}: {error}")
            self.store.set_state(held.name, "failed", held.error)
            log.warning("skyward.server_pool_failed", pool=held.name, error=held.error)
        else:
            if held.state == "starting":
                held.state = "ready"
                self.store.set_state(held.name, "ready")
                log.info("skyward.server_pool_ready", pool=held.name, nodes=pool.current_nodes())
                self._hold(held.name, pool)
        finally:
            held.last_used = time.time()
            held.started.set()

    @staticmethod
    def _hold(name: str, pool: Pool) -> None:
        """A cloud pool's machines recorded for `restore` after a crash (`Pool.hold_machines`)."""
        try:
            pool.hold_machines()
        except Exception as error:  # noqa: BLE001 - only a crash's recovery is lost: logged
            structlog.get_logger().warning("skyward.server_hold_failed", pool=name, error=mask(str(error)))

    def _record(self, held: Held, event: Any) -> None:
        """Keep a pool's event in its history (a task's as a count); of its metric samples only each
        one's latest (in memory, for `sky compute view`); its output lines not at all. Every string
        of it is masked first: subscribers and the database get no secret of the pool."""
        name = held.name
        event = redact(event, held.masked)
        held.feed.publish(event)
        if isinstance(event, Metric):
            samples = held.metrics.setdefault(str(event.node), {})
            samples[event.name] = {"value": event.value, "unit": event.unit}
            return
        if isinstance(event, Log):
            return
        kind = type(event).__name__
        try:
            if kind in COUNTED:
                failed = isinstance(event, TaskCompleted) and not event.success
                self.store.count(name, kind, str(getattr(event, "name", "") or getattr(event, "node", "")),
                                 mask(event.error, held.masked) if failed else None)
                return
            data = attrs.asdict(event, recurse=True) if attrs.has(type(event)) else {"event": str(event)}
            self.store.event(name, kind, redact_json(data, held.masked))
        except Exception as error:  # noqa: BLE001 - history is best effort; the pool goes on
            structlog.get_logger().debug("skyward.server_event_not_kept", pool=name, error=str(error))

    def delete(self, name: str, wait: bool = True) -> threading.Thread:
        """End the pool `name` (its machines released) and forget it; the thread that ends it
        (`wait=False`: the caller waits for it as it can, the HTTP handler without a thread)."""
        held = self._get(name)
        with self._lock:
            if held.state == "stopping":
                raise Conflict(f"pool {name!r} is already being deleted")
            previous, held.state = held.state, "stopping"
        self.store.set_state(name, "stopping")
        thread = threading.Thread(target=self._stop, args=(held, previous), name=f"skyward-stop-{name}",
                                  daemon=True)
        thread.start()
        if wait:
            thread.join(STOP_TIMEOUT)
        return thread

    def _stop(self, held: Held, previous: str) -> None:
        held.started.wait(STOP_TIMEOUT)  # a pool still starting is ended once its start returns
        try:
            if held.pool is not None:
                held.pool.stop(reason="deleted")
        except Exception as error:  # noqa: BLE001 - logged; the pool is forgotten either way
            structlog.get_logger().warning("skyward.server_pool_stop_failed", pool=held.name,
                                           error=mask(str(error)))
        finally:
            with self._lock:
                self._held.pop(held.name, None)
            self.store.drop_pool(held.name)

    def close(self) -> None:
        """End every pool (the server is stopping), in parallel, each waited for."""
        threads = []
        for name in list(self._held):
            try:
                self.delete(name, wait=False)
            except RequestError:
                continue
        for thread in threading.enumerate():
            if thread.name.startswith("skyward-stop-"):
                threads.append(thread)
        for thread in threads:
            thread.join(STOP_TIMEOUT)

    def restore(self) -> dict[str, list[str]]:
        """What a server that died left in the store, taken up again:
        `{"adopted": [...], "ended": [...], "failed": [...]}`.

        Pools on machines that outlive the server and can be reached again are started again
        under the same name: Local and SSH pools on the same node folders of the same hosts (venv
        reused, the guardian's lease renewed before it lapses), and a cloud pool whose provider
        held its machines' record (every cloud package's: `Pool.hold_machines`) on those
        machines, adopted as a lingering pool's are (`providers/linger.py`) if their guardians
        have not ended them yet (else on new ones). A pool on any other provider is not
        reconnected to: its machines, found by the pool's mark, are ended through the provider's
        sweeper (`sky down NAME` does the same), and its guardians end whatever the sweeper could
        not reach `ttl` after the server died. See docs/server.md.

        The stored table's secrets are references (`{"from_env": "HF_TOKEN"}`), read from this
        server's environment; a pool whose variable is not set is not started again (its machines
        are ended as above) and is held as "failed", its error naming the variables to set.
        """
        outcome: dict[str, list[str]] = {"adopted": [], "ended": [], "failed": []}
        for row in self.store.pools():
            self.store.drop_pool(row.name)
            outcome[self._restore_one(row)].append(row.name)
        structlog.get_logger().info("skyward.server_restored", **outcome)
        return outcome

    def _restore_one(self, row: Any) -> str:
        """Take up one pool a dead server left: "adopted", "ended" or "failed"."""
        from skyward.providers import linger

        log = structlog.get_logger()
        live = row.state not in ("stopping", "failed")
        key = row.pool_id or row.name  # what its machines, folders and held record are keyed by
        try:
            config = resolve(row.name, row.config, os.environ) if live else row.config
        except MissingSecret as error:
            log.warning("skyward.server_restore_failed", pool=row.name, error=str(error))
            self._end_left_machines(key, row.config)
            self._hold_failed(row.name, row.config, f"not restored: {error}")
            return "failed"
        ttl = float(config.get("ttl", 600) or 0)
        held = live and linger.release_held(key, time.time() + ttl)
        if live and (provider_name(config) in ADOPTABLE or held):
            try:
                self.create(row.name, config, pool_id=row.pool_id)
            except RequestError as error:
                log.warning("skyward.server_restore_failed", pool=row.name, error=mask(str(error)))
            else:
                return "adopted"
        self._end_left_machines(key, config)
        return "ended"

    @staticmethod
    def _end_left_machines(key: str, config: dict[str, Any]) -> None:
        """A dead server's pool that is not started again: a cloud's machines ended by its sweeper
        (Local and SSH workers ended with the server, or end with their lease). `key`: the pool's id."""
        from skyward.providers import linger

        if provider_name(config) not in ADOPTABLE:
            linger.forget([key])
            end_machines(key, config)

    def _hold_failed(self, name: str, stored: dict[str, Any], error: str) -> None:
        """Show a pool that could not be taken up as "failed" (its table as stored, its error) until
        it is deleted; nothing of it runs, and nothing of it is written again."""
        held = Held(name, stored, state="failed", error=error)
        held.started.set()
        with self._lock:
            self._held.setdefault(name, held)

    def reap_idle(self, now: float | None = None) -> list[str]:
        """End the ready pools nothing has used (no run, call or file transfer) for `idle_timeout`
        seconds; their names."""
        if self.idle_timeout is None:
            return []
        now = time.time() if now is None else now
        ended = [
            held.name for held in list(self._held.values())
            if held.state == "ready" and held.running == 0 and now - held.last_used >= self.idle_timeout
        ]
        for name in ended:
            structlog.get_logger().info("skyward.server_pool_idle", pool=name, idle_timeout=self.idle_timeout)
            try:
                self.delete(name, wait=False)
            except RequestError:
                continue
        return ended

    @contextlib.contextmanager
    def in_use(self, name: str) -> Iterator[Held]:
        """The pool `name`, in use for the block (an upload being spooled: not idle)."""
        held = self._get(name)
        with held.busy():
            yield held

    # -- reading -------------------------------------------------------------------------------------

    def _get(self, name: str) -> Held:
        held = self._held.get(name)
        if held is None:
            known = ", ".join(sorted(self._held)) or "none"
            raise NotFound(f"the server holds no pool {name!r} (it holds: {known}); "
                           f"create it with `sky compute create {name}`")
        return held

    def get(self, name: str) -> dict[str, Any]:
        return self._get(name).describe()

    def feed(self, name: str) -> EventFeed:
        """The live events of the pool `name` (held, whatever its state)."""
        return self._get(name).feed

    def metrics(self, name: str) -> dict[str, dict[str, dict[str, Any]]]:
        """The latest sample of each metric, by node."""
        return {node: dict(samples) for node, samples in dict(self._get(name).metrics).items()}

    def list(self) -> list[dict[str, Any]]:
        return [held.describe() for held in list(self._held.values())]

    def wait_ready(self, name: str, timeout: float) -> dict[str, Any]:
        """The pool once its start has returned (ready or failed), or as it is after `timeout`."""
        self._get(name).started.wait(timeout)
        return self.get(name)

    def started(self, name: str) -> bool:
        """Whether the start of the pool `name` has returned (ready or failed)."""
        return self._get(name).started.is_set()

    # -- running scripts -----------------------------------------------------------------------------

    def targets(self, name: str, node: str) -> tuple[Held, list[int | str]]:
        """The pool and the nodes `node` names: "head", "all", or a node's rank."""
        held = self._get(name)
        if held.state != "ready" or held.pool is None:
            why = f": {held.error}" if held.error else ""
            raise Conflict(f"pool {name!r} is {held.state}{why}; wait for it to be ready "
                           f"(`sky compute get {name}`)")
        if node == "head":
            return held, ["head"]
        if node == "all":
            return held, list(range(held.pool.current_nodes()))
        try:
            rank = int(node)
        except ValueError:
            raise RequestError(f"--node {node!r}: use head, all or a node's rank (0, 1, ...)") from None
        nodes = held.pool.current_nodes()
        if not 0 <= rank < nodes:
            raise RequestError(f"--node {rank}: pool {name!r} has nodes 0 to {nodes - 1}")
        return held, [rank]

    def upload(self, name: str, node: str, archive: str, destination: str) -> dict[str, list[str]]:
        """Unpack the tar.gz file `archive` (spooled here) into `destination` on the nodes `node`
        names, streamed to each as it reads it; the paths written, by node. The pool is in use
        meanwhile."""
        held, targets = self.targets(name, node)
        assert held.pool is not None
        unpacking = function(unpack_chunks, timeout=None)
        pool = held.pool
        with held.busy():
            return {
                str(t if t != "head" else 0): pool.run(unpacking(file_chunks(archive), destination), target=t)
                for t in targets
            }

    def download(self, name: str, node: str, path: str) -> Iterator[bytes]:
        """`path` on one node (`head` or a rank) as a tar.gz, in chunks as the node makes them;
        the first is read here, so that a missing path is the request's error. The pool is in use
        until the last chunk is read (or the chunks are closed)."""
        if node == "all":
            raise RequestError("download from one node: --node head or a rank")
        held, targets = self.targets(name, node)
        assert held.pool is not None
        held.use()
        try:
            chunks = iter(held.pool.run(function(pack_chunks, timeout=None)(path), target=targets[0]))
            first = next(chunks, b"")
        except BaseException:
            held.release()
            raise
        return InUse(chunks, held, first)

    def run(self, held: Held, target: int | str, script: str, source: str, argv: list[str],
            cancel: Cancel) -> Iterator[tuple[str, Any]]:
        """Run the script on one node; its `(stream, text)` chunks, then `("exit", code)`."""
        assert held.pool is not None
        lock = held.node_locks.setdefault(str(target), threading.Lock())
        with lock, held.busy():
            try:
                call = function(run_script, timeout=None)(script, source, argv)
                remote = held.pool.run(call, target=target)
                cancel.watch(remote)
                try:
                    for item in remote:
                        yield item
                        if cancel.is_set():
                            return
                finally:
                    remote.close()
            finally:
                self.store.touch(held.name)
