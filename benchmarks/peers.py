"""One adapter per framework: start a pool of N worker processes, call, map, stop.

Every adapter has the same small surface, so a case is written once for all of them:

    peer.start(workers)      # returns when the pool has run its first no-op task
    peer.call(fn, *args)     # one task, waited for
    peer.map(fn, items)      # one task per item, all submitted at once, results in order
    peer.stop()

Peers other than Skyward are optional: `available()` says whether the package imports here, and
a missing one is reported as "missing" in the table.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import bench_tasks


class Peer:
    name = ""
    #: The module whose presence makes this peer available.
    module = ""

    def available(self) -> bool:
        try:
            importlib.import_module(self.module)
        except ImportError:
            return False
        return True

    def start(self, workers: int) -> None:
        raise NotImplementedError

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class Skyward(Peer):
    name, module = "Skyward", "skyward"

    def start(self, workers: int) -> None:
        import skyward as sky

        self._sky = sky
        self._functions: dict[Any, Any] = {}
        self.pool = sky.Compute(provider=sky.Local(), nodes=workers, console=False, logging=False)
        self.pool.start()
        self.call(bench_tasks.noop)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        remote = self._functions.get(fn)
        if remote is None:
            remote = self._functions[fn] = self._sky.function(fn)
        return remote(*args) >> self.pool

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        return self.pool.map(fn, items)

    def stop(self) -> None:
        self.pool.stop()


class Ray(Peer):
    name, module = "Ray", "ray"

    def start(self, workers: int) -> None:
        import ray

        self._ray = ray
        self._remote: dict[Any, Any] = {}
        ray.init(num_cpus=workers, log_to_driver=False, configure_logging=False)
        self.call(bench_tasks.noop)

    def _fn(self, fn: Callable[..., Any]) -> Any:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(fn)
        return remote

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._ray.get(self._fn(fn).remote(*args))

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        remote = self._fn(fn)
        return self._ray.get([remote.remote(item) for item in items])

    def stop(self) -> None:
        self._ray.shutdown()


class Dask(Peer):
    name, module = "Dask", "distributed"

    def start(self, workers: int) -> None:
        from distributed import Client, LocalCluster

        # 100 MB arguments make dask warn about large graphs; the payload case means to send them.
        warnings.filterwarnings("ignore", module="distributed")
        self.cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        self.client = Client(self.cluster)
        self.call(bench_tasks.noop)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False).result()

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        return self.client.gather(self.client.map(fn, list(items), pure=False))

    def stop(self) -> None:
        self.client.close()
        self.cluster.close()


class _Executor(Peer):
    """A `concurrent.futures` executor (loky's and the standard library's)."""

    executor: Any

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.executor.submit(fn, *args).result()

    def map(self, fn: Callable[..., Any], items: Iterable[Any]) -> list[Any]:
        return list(self.executor.map(fn, items))

    def stop(self) -> None:
        self.executor.shutdown(wait=True)


class Loky(_Executor):
    name, module = "loky", "loky"

    def start(self, workers: int) -> None:
        import loky

        self.executor = loky.get_reusable_executor(max_workers=workers)
        self.call(bench_tasks.noop)


class ProcessPool(_Executor):
    name, module = "ProcessPool", "concurrent.futures"

    def start(self, workers: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.executor = ProcessPoolExecutor(workers)
        self.call(bench_tasks.noop)


#: Table columns, in order.
ALL: list[type[Peer]] = [Skyward, Ray, Dask, Loky, ProcessPool]
NAMES = [p.name for p in ALL]


def by_name(name: str) -> type[Peer]:
    for peer in ALL:
        if peer.name.lower() == name.lower():
            return peer
    raise KeyError(name)
