"""`sky.plugins.joblib()` and `sky.plugins.sklearn()`: joblib's `Parallel` on the pool's workers.

Both plugins add their packages to the workers' image and, on the client, register a joblib
parallel backend for the lifetime of the pool (``around_client``). Inside the pool's ``with``
block, ``Parallel(n_jobs=-1)`` and every scikit-learn estimator's ``n_jobs`` send their work to
the pool instead of local processes::

    with sky.Compute(provider=sky.AWS(), nodes=4, worker=sky.Worker(concurrency=4),
                     plugins=[sky.plugins.sklearn()]):
        GridSearchCV(SVC(), grid, cv=5, n_jobs=-1).fit(X, y)   # 16 slots on the cluster

How it maps onto joblib:

- the backend is a `joblib.parallel.ParallelBackendBase` registered under the name ``"skyward"``
  with `joblib.register_parallel_backend` and made the default with `joblib.parallel_config`
  (``n_jobs=-1``), so ``n_jobs=None`` in scikit-learn also means "the whole pool";
- ``n_jobs=-1`` is every task slot of the pool, ``pool.current_nodes() * Worker.concurrency``;
  ``-2`` one slot less, and so on (joblib's own convention); a positive ``n_jobs`` is taken as is,
  extra batches wait in the pool's queue;
- each batch joblib forms is one Skyward task: a pending call of `joblib_batch`, dispatched with
  ``pool.run_async``; its future goes back to joblib through the ``submit`` / callback /
  ``retrieve_result_callback`` protocol, so a task's exception is re-raised by ``Parallel`` with
  its own type, and ``Parallel(timeout=...)`` and ``return_as="generator"`` work;
- callbacks run on one thread owned by the plugin, never on the pool's event loop: joblib's
  callback dispatches (and so pickles) the next batch, which must not stall the loop.

Only the thread that entered the pool gets the backend as its default (joblib's configuration is
per thread); other threads can select it with ``parallel_config(backend="skyward")``. On exit the
previous configuration and any backend registered before under the same name are restored.

An explicit ``n_jobs=1`` runs in the calling process, as it does with every joblib backend. On a
pool with a single slot, other values still dispatch to the pool: joblib runs a call in-process
whenever the backend reports one job, so the backend asks for two there (the second batch waits
in the pool's queue) instead of quietly computing on the client.

Calls nested inside a task use joblib's default nested backend on the worker (threads one level
down, then sequential), as below any other process-based backend.

joblib is imported only when a pool using the plugin starts, so it is a dependency of the user's
environment only when the plugin is used.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import structlog

from skyward.errors import ConfigurationError
from skyward.extension.plugin import Plugin
from skyward.function import PendingFunction

__all__ = ["BACKEND_NAME", "joblib", "joblib_batch", "sklearn"]

#: The name the backend is registered under while a pool with the plugin is open.
BACKEND_NAME = "skyward"


def joblib(*, version: str | None = None) -> Plugin:
    """Run joblib's ``Parallel`` on the pool; ``version`` pins joblib on the workers (``"1.4.2"``)."""
    pip = (_requirement("joblib", version, "joblib"),)
    return Plugin.create("joblib").with_image_transform(_add_pip(pip)).with_around_client(_around_client)


def sklearn(*, version: str | None = None) -> Plugin:
    """Run scikit-learn's ``n_jobs`` on the pool; ``version`` pins scikit-learn on the workers."""
    pip = (_requirement("scikit-learn", version, "sklearn"), "joblib")
    return Plugin.create("sklearn").with_image_transform(_add_pip(pip)).with_around_client(_around_client)


def joblib_batch(batch: Any) -> list[Any]:
    """Run one joblib batch on a worker: the results of its calls, in order (the batch's own ``__call__``)."""
    return batch()


# -- image ---------------------------------------------------------------------------------------------


def _requirement(package: str, version: str | None, plugin: str) -> str:
    if version is None:
        return package
    if not isinstance(version, str) or not version.strip():
        raise ConfigurationError(
            f"sky.plugins.{plugin}(version={version!r}): expected a version string such as "
            f'version="1.4.2", or no version for the latest'
        )
    version = version.strip()
    # "1.4.2" pins; a specifier such as ">=1.4" is passed through as written.
    return f"{package}{version}" if version[0] in "<>=!~" else f"{package}=={version}"


def _add_pip(packages: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    def transform(image: Any, cluster: Any) -> Any:
        return image.with_pip(*packages)

    return transform


# -- client ----------------------------------------------------------------------------------------------


def _around_client(pool: Any, cluster: Any) -> contextlib.AbstractContextManager[None]:
    return _backend_scope(pool)


@contextlib.contextmanager
def _backend_scope(pool: Any) -> Iterator[None]:
    """Register the backend for `pool` and make it this thread's default until the pool closes."""
    import joblib as joblib_lib
    from joblib.parallel import BACKENDS

    backend_class = _backend_class()
    callbacks = _CallbackThread()
    # joblib has no unregister: remember what the name meant before, to put it back on exit.
    previous = BACKENDS.get(BACKEND_NAME)
    joblib_lib.register_parallel_backend(BACKEND_NAME, functools.partial(backend_class, pool, callbacks))
    try:
        with joblib_lib.parallel_config(backend=BACKEND_NAME, n_jobs=-1):
            yield
    finally:
        callbacks.close()
        if previous is None:
            BACKENDS.pop(BACKEND_NAME, None)
        else:
            BACKENDS[BACKEND_NAME] = previous


class _CallbackThread:
    """Runs joblib's completion callbacks, in completion order, off the pool's event loop."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skyward-joblib")
        self._lock = threading.Lock()
        self._closed = False

    def deliver(self, callback: Callable[[Any], Any], future: Future[Any]) -> None:
        with self._lock:
            if not self._closed:
                self._executor.submit(_call_logged, callback, future)
                return
        # The pool is closing: a call still waiting (from another thread) must hear about its
        # batches, and no new batch can be dispatched any more, so running it here is cheap.
        _call_logged(callback, future)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._executor.shutdown(wait=False)


def _call_logged(callback: Callable[[Any], Any], future: Future[Any]) -> None:
    try:
        callback(future)
    except BaseException:  # noqa: BLE001 - a callback thread has no caller to raise to
        structlog.get_logger().exception("skyward.joblib_callback_failed")


class _SkywardBackendMethods:
    """What the Skyward backend does, apart from joblib's base classes (which `_backend_class`
    mixes in on first use, so that importing this module does not import joblib)."""

    default_n_jobs = -1
    supports_retrieve_callback = True
    supports_timeout = True
    supports_return_generator = True
    supports_inner_max_num_threads = False
    supports_sharedmem = False
    uses_threads = False

    def __init__(
        self,
        pool: Any,
        callbacks: _CallbackThread,
        nesting_level: int | None = None,
        inner_max_num_threads: int | None = None,
        **backend_kwargs: Any,
    ) -> None:
        super().__init__(
            nesting_level=nesting_level, inner_max_num_threads=inner_max_num_threads, **backend_kwargs
        )
        self.pool = pool
        self._callbacks = callbacks

    def slots(self) -> int:
        """Tasks the pool runs at once: ready nodes times each node's concurrency."""
        return max(self.pool.current_nodes(), 1) * self.pool.worker.concurrency

    def effective_n_jobs(self, n_jobs: int | None) -> int:
        if n_jobs == 0:
            raise ValueError("n_jobs == 0 in Parallel has no meaning")
        if n_jobs is None:
            n_jobs = self.default_n_jobs
        if n_jobs < 0:
            return max(self.slots() + 1 + n_jobs, 1)
        return n_jobs

    def configure(self, n_jobs: int | None = 1, parallel: Any = None, **backend_kwargs: Any) -> int:
        self.parallel = parallel
        effective = self.effective_n_jobs(n_jobs)
        if effective == 1 and n_jobs != 1:
            # joblib runs a call in the caller when this returns 1; only n_jobs=1 asks for that.
            return 2
        return effective

    def submit(self, func: Any, callback: Callable[[Any], Any] | None = None) -> Future[Any]:
        try:
            future = self.pool.run_async(PendingFunction(joblib_batch, (func,), {}))
        except Exception as exc:  # noqa: BLE001 - reported through the future, like a task's error
            future = Future()
            future.set_exception(exc)
        if callback is not None:
            future.add_done_callback(functools.partial(self._callbacks.deliver, callback))
        return future

    #: joblib before 1.5 calls `apply_async` (same contract) instead of `submit`.
    apply_async = submit

    def retrieve_result_callback(self, out: Future[Any]) -> Any:
        return out.result()

    def __repr__(self) -> str:
        return f"<SkywardBackend {getattr(self.pool, 'name', self.pool)}>"


@functools.cache
def _backend_class() -> type[Any]:
    """The backend class, built on first use so that importing this module does not import joblib."""
    from joblib._parallel_backends import AutoBatchingMixin
    from joblib.parallel import ParallelBackendBase

    bases = (_SkywardBackendMethods, AutoBatchingMixin, ParallelBackendBase)

    class SkywardBackend(*bases):  # type: ignore[misc]
        """joblib backend whose workers are a Skyward pool's task slots; one batch, one task.

        Batches grow with `AutoBatchingMixin`, as with joblib's own process backends: with
        `batch_size="auto"` a batch of small calls is sized to take a fraction of a second, so
        2,000 tiny calls are a handful of tasks, not 2,000 round trips.
        """

    SkywardBackend.__qualname__ = "SkywardBackend"
    return SkywardBackend
