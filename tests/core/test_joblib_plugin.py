"""`sky.plugins.joblib()`: joblib's `Parallel` runs on the pool's worker processes, only inside the pool."""

from __future__ import annotations

import os
import subprocess
import sys

import joblib
import pytest
from core_support import local_pool, parent_pid, worker_pid
from joblib import Parallel, delayed
from joblib.parallel import BACKENDS, get_active_backend

import skyward as sky
from skyward.plugins.builtin.joblib import BACKEND_NAME

pytestmark = pytest.mark.timeout(60)


class BatchFailed(Exception):
    """Defined in the test module, which travels by value: the client must get this very class back."""


def square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise BatchFailed(f"item {x} failed")
    return x


def pid() -> int:
    return os.getpid()


def joblib_pool(nodes: int = 2, **kwargs: object) -> sky.Pool:
    return local_pool(nodes, plugins=[sky.plugins.joblib()], **kwargs)


# -- the image ---------------------------------------------------------------------------------------------


def test_transform_adds_joblib() -> None:
    assert sky.plugins.joblib().transform(sky.Image(), None).pip == ("joblib",)
    assert sky.plugins.joblib(version="1.4.2").transform(sky.Image(), None).pip == ("joblib==1.4.2",)
    assert sky.plugins.joblib(version=">=1.4").transform(sky.Image(), None).pip == ("joblib>=1.4",)
    # Appended after what the image had, and never twice.
    image = sky.Image(pip=["numpy", "joblib"])
    assert sky.plugins.joblib().transform(image, None).pip == ("numpy", "joblib")


def test_bad_version_is_a_configuration_error() -> None:
    with pytest.raises(sky.ConfigurationError, match="version"):
        sky.plugins.joblib(version="")


def test_the_plugin_does_not_import_joblib_until_a_pool_uses_it() -> None:
    code = (
        "import sys, skyward as sky\n"
        "plugin = sky.plugins.joblib(); sky.plugins.joblib(); sky.plugins.sklearn()\n"
        "plugin.transform(sky.Image(), None)\n"
        "assert 'joblib' not in sys.modules, 'joblib was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


# -- dispatch ----------------------------------------------------------------------------------------------


def test_parallel_runs_on_the_workers_in_order() -> None:
    with joblib_pool(2) as pool:
        node_pids = set(worker_pid() @ pool)
        results = Parallel(n_jobs=-1)(delayed(square_and_pid)(x) for x in range(40))

    assert [square for square, _ in results] == [x * x for x in range(40)]
    pids = {p for _, p in results}
    assert os.getpid() not in pids
    assert pids == node_pids  # every batch ran on a node, and both nodes got work
    assert len(node_pids) == 2


def test_each_batch_is_one_task() -> None:
    started: list[str] = []
    with joblib_pool(2) as pool:
        pool.on(sky.TaskStarted, lambda event: started.append(event.name))
        parallel = Parallel(n_jobs=-1, batch_size=5)
        assert len(parallel(delayed(square_and_pid)(x) for x in range(20))) == 20
    assert parallel.n_dispatched_batches > 1
    assert started == ["joblib_batch"] * parallel.n_dispatched_batches


def test_all_jobs_is_nodes_times_concurrency() -> None:
    with joblib_pool(2, worker=sky.Worker(concurrency=2)):
        backend, _ = get_active_backend()
        assert type(backend).__name__ == "SkywardBackend"
        assert joblib.effective_n_jobs(-1) == 4
        assert joblib.effective_n_jobs(None) == 4  # scikit-learn's n_jobs=None means the whole pool here
        assert joblib.effective_n_jobs(-2) == 3
        assert joblib.effective_n_jobs(3) == 3
        assert joblib.effective_n_jobs(1) == 1


def test_a_task_error_reaches_the_caller_with_its_type() -> None:
    with joblib_pool(2) as pool:
        with pytest.raises(BatchFailed, match="item 7 failed"):
            Parallel(n_jobs=-1)(delayed(fail_on)(x, 7) for x in range(12))
        with pytest.raises(ZeroDivisionError):
            Parallel(n_jobs=-1)(delayed(divmod)(1, x) for x in (2, 1, 0))
        # The pool and the backend still work after a failed call.
        assert Parallel(n_jobs=-1)(delayed(fail_on)(x, -1) for x in range(6)) == list(range(6))
        assert pool.current_nodes() == 2


def test_generator_output_and_explicit_backend_name() -> None:
    with joblib_pool(2):
        gen = Parallel(n_jobs=-1, return_as="generator")(delayed(square_and_pid)(x) for x in range(8))
        assert [square for square, _ in gen] == [x * x for x in range(8)]
        # Selecting the backend by name works too (any thread can do this while the pool is open).
        with joblib.parallel_config(backend=BACKEND_NAME):
            pids = Parallel(n_jobs=2)(delayed(pid)() for _ in range(4))
        assert os.getpid() not in pids


def test_single_slot_pool_still_runs_on_the_worker() -> None:
    with joblib_pool(1) as pool:
        (node_pid,) = worker_pid() @ pool
        assert joblib.effective_n_jobs(-1) == 1
        assert set(Parallel(n_jobs=-1)(delayed(pid)() for _ in range(4))) == {node_pid}
        # An explicit n_jobs=1 runs in the caller, as with every joblib backend.
        assert Parallel(n_jobs=1)(delayed(pid)() for _ in range(2)) == [os.getpid()] * 2


# -- scope -------------------------------------------------------------------------------------------------


def test_backend_is_restored_after_the_pool() -> None:
    before_backend, before_n_jobs = get_active_backend()
    assert BACKEND_NAME not in BACKENDS

    with joblib_pool(2) as pool:
        node_pids = set(worker_pid() @ pool)
        assert BACKEND_NAME in BACKENDS

    assert BACKEND_NAME not in BACKENDS
    after_backend, after_n_jobs = get_active_backend()
    assert type(after_backend) is type(before_backend)
    assert after_n_jobs == before_n_jobs

    pids = Parallel(n_jobs=2)(delayed(pid)() for _ in range(4))
    assert not set(pids) & node_pids
    assert all(parent_pid(p) == os.getpid() or p == os.getpid() for p in pids)  # local processes again


def test_a_backend_registered_before_under_the_name_comes_back() -> None:
    threading_factory = BACKENDS["threading"]
    joblib.register_parallel_backend(BACKEND_NAME, threading_factory)
    try:
        with joblib_pool(1):
            assert BACKENDS[BACKEND_NAME] is not threading_factory
        assert BACKENDS[BACKEND_NAME] is threading_factory
    finally:
        BACKENDS.pop(BACKEND_NAME, None)


def test_backend_is_restored_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError, match="user error"), joblib_pool(1):
        raise RuntimeError("user error")
    assert BACKEND_NAME not in BACKENDS
    assert type(get_active_backend()[0]).__name__ != "SkywardBackend"
