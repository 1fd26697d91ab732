"""Failures cross the wire intact: remote exceptions, and what cannot be pickled on either side."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from core_support import assert_pool_works, local_pool

import skyward as sky

pytestmark = pytest.mark.timeout(60)


class NeedsTwoArguments(Exception):
    """Pickles fine on the worker but cannot be rebuilt: unpickling calls cls(message) with one argument."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@sky.function
def boom() -> None:
    raise ValueError("bad value")


@sky.function
def raise_key_error() -> None:
    {}["missing"]


@sky.function
def raise_class_made_in_the_task() -> None:
    made_here = type("MadeHere", (Exception,), {})
    raise made_here("from a class built inside the task")


@sky.function
def raise_exception_holding_a_lock() -> None:
    error = RuntimeError("holds a lock")
    error.lock = threading.Lock()  # type: ignore[attr-defined]
    raise error


@sky.function
def raise_unrebuildable() -> None:
    raise NeedsTwoArguments("needs two", 7)


@sky.function
def raise_from_worker_only_module() -> None:
    import worker_only_errors

    raise worker_only_errors.OnlyOnTheWorker("defined where the client cannot import it")


@sky.function
def echo(value: object) -> object:
    return value


@sky.function
def touch(path: str, value: object) -> None:
    Path(path).touch()


@sky.function
def return_a_lock() -> threading.Lock:
    return threading.Lock()


def test_remote_exception_keeps_its_type_and_message(pool: sky.Pool) -> None:
    with pytest.raises(ValueError) as caught:
        boom() >> pool
    assert type(caught.value) is ValueError
    assert str(caught.value) == "bad value"


def test_remote_traceback_is_attached_as_a_note(pool: sky.Pool) -> None:
    with pytest.raises(ValueError) as caught:
        pool.run(boom(), target=1)
    (note,) = caught.value.__notes__
    assert note.startswith("Remote traceback (from node 1):")
    assert "in boom" in note
    assert 'raise ValueError("bad value")' in note


def test_builtin_exception_arrives_as_itself(pool: sky.Pool) -> None:
    with pytest.raises(KeyError, match="missing"):
        raise_key_error() >> pool


def test_remote_exception_is_raised_by_each_operator(pool: sky.Pool) -> None:
    with pytest.raises(ValueError):
        boom() @ pool
    with pytest.raises(ValueError):
        (boom() > pool).result(timeout=30)
    with pytest.raises(ValueError):
        (echo(1) & boom()) >> pool


def test_exception_class_made_inside_the_task_is_rebuilt_by_value(pool: sky.Pool) -> None:
    """cloudpickle ships a class the worker built at run time by value, so the client gets that class."""
    with pytest.raises(Exception) as caught:
        raise_class_made_in_the_task() >> pool
    error = caught.value
    assert type(error).__name__ == "MadeHere"
    assert str(error) == "from a class built inside the task"
    assert "Remote traceback" in error.__notes__[0]


def test_exception_that_cannot_be_pickled_arrives_as_remote_error(pool: sky.Pool) -> None:
    with pytest.raises(sky.RemoteError) as caught:
        raise_exception_holding_a_lock() >> pool
    error = caught.value
    assert error.type_name == "builtins.RuntimeError"
    assert error.message == "holds a lock"
    assert "raise_exception_holding_a_lock" in error.traceback
    assert "RuntimeError: holds a lock" in error.traceback
    assert str(error) == "builtins.RuntimeError: holds a lock"
    assert_pool_works(pool)


def test_exception_that_cannot_be_rebuilt_on_the_client_arrives_as_remote_error(pool: sky.Pool) -> None:
    with pytest.raises(sky.RemoteError) as caught:
        raise_unrebuildable() >> pool
    error = caught.value
    assert error.type_name.endswith("NeedsTwoArguments")
    assert error.message == "needs two"
    assert "raise_unrebuildable" in error.traceback
    assert "Remote traceback" in error.__notes__[0]


def test_exception_class_only_importable_on_the_worker_arrives_as_remote_error(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "worker_only_errors.py").write_text("class OnlyOnTheWorker(Exception):\n    pass\n")
    with local_pool(1, image=sky.Image(includes=[str(source)])) as compute:
        with pytest.raises(sky.RemoteError) as caught:
            raise_from_worker_only_module() >> compute
        assert caught.value.type_name == "worker_only_errors.OnlyOnTheWorker"
        assert caught.value.message == "defined where the client cannot import it"
        assert_pool_works(compute)


def test_remote_error_survives_pickling() -> None:
    import pickle

    error = sky.RemoteError("pkg.Error", "message", "Traceback ...")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.type_name, copy.message, copy.traceback) == ("pkg.Error", "message", "Traceback ...")


def test_unpicklable_argument_is_named_before_dispatch(pool: sky.Pool, tmp_path: Path) -> None:
    started: list[str] = []
    unsubscribe = pool.on(sky.TaskStarted, lambda event: started.append(event.name))
    marker = tmp_path / "ran"
    try:
        expected = r"Argument 1 of touch\(\) cannot be pickled \(lock\)"
        with pytest.raises(sky.SerializationError, match=expected):
            touch(str(marker), threading.Lock()) >> pool
        assert echo("after") >> pool == "after"  # dispatched after the bad call would have been
    finally:
        unsubscribe()
    assert started == ["echo"]
    assert not marker.exists()
    assert_pool_works(pool)


def test_unpicklable_keyword_argument_is_named(pool: sky.Pool, tmp_path: Path) -> None:
    with pytest.raises(sky.SerializationError, match=r"Argument value= of touch\(\)"):
        touch(str(tmp_path / "ran"), value=threading.Lock()) >> pool
    assert_pool_works(pool)


def test_unpicklable_argument_fails_every_operator_before_dispatch(pool: sky.Pool) -> None:
    lock = threading.Lock()
    with pytest.raises(sky.SerializationError):
        echo(lock) @ pool
    with pytest.raises(sky.SerializationError):
        _ = echo(lock) > pool
    with pytest.raises(sky.SerializationError):
        (echo(1) & echo(lock)) >> pool
    assert_pool_works(pool)


def test_unpicklable_closure_is_reported_with_the_function_name(pool: sky.Pool) -> None:
    lock = threading.Lock()

    @sky.function
    def uses_lock() -> int:
        with lock:
            return 1

    with pytest.raises(sky.SerializationError, match=r"The function uses_lock\(\) cannot be pickled"):
        uses_lock() >> pool
    assert_pool_works(pool)


def test_unpicklable_return_value_fails_the_task_with_serialization_error(pool: sky.Pool) -> None:
    expected = r"return value of return_a_lock\(\) \(lock\) cannot be pickled"
    with pytest.raises(sky.SerializationError, match=expected):
        return_a_lock() >> pool
    assert_pool_works(pool)


def test_unpicklable_yielded_item_fails_the_stream_with_serialization_error(pool: sky.Pool) -> None:
    @sky.function
    def yields_a_lock():
        yield 1
        yield threading.Lock()

    received = []
    with pytest.raises(sky.SerializationError, match=r"item yielded by yields_a_lock\(\)"):
        for item in yields_a_lock() >> pool:
            received.append(item)
    assert received == [1]
    assert_pool_works(pool)
