"""Failures cross the wire intact: remote exceptions, and what cannot be pickled on either side."""

from __future__ import annotations

import linecache
import subprocess
import sys
import textwrap
import threading
import traceback
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


def test_remote_traceback_names_the_file_and_line_of_a_function_shipped_by_value(pool: sky.Pool) -> None:
    """This module is shipped by value, as a script is; cloudpickle 3.1 alone would say "<dynamic-code>"."""
    line = boom.fn.__code__.co_firstlineno + 2
    with pytest.raises(ValueError) as caught:
        boom() >> pool
    (note,) = caught.value.__notes__
    assert f'File "{__file__}", line {line}, in boom\n    raise ValueError("bad value")\n' in note
    assert "<dynamic-code>" not in note


def test_remote_traceback_of_a_script_names_the_script_and_its_line(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """\
            import skyward as sky


            @sky.function
            def train(lr):
                loss = 1 / lr
                raise ArithmeticError(f"diverged at loss {loss}")


            if __name__ == "__main__":
                with sky.Compute(provider=sky.Local(), nodes=1, console=False, logging=False) as pool:
                    try:
                        train(0.5) >> pool
                    except ArithmeticError as error:
                        print(error.__notes__[0])
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True
    )
    expected = f'File "{script}", line 7, in train\n    raise ArithmeticError(f"diverged at loss {{loss}}")\n'
    assert expected in result.stdout
    assert result.stdout.rstrip().endswith("ArithmeticError: diverged at loss 2.0")


def cache_cell(source: str, filename: str) -> None:
    """IPython's `CachingCompiler.cache`: a cell's lines in `linecache`, never expired (mtime None)."""
    linecache.cache[filename] = (len(source), None, [line + "\n" for line in source.splitlines()], filename)


def run_notebook_cell(source: str, filename: str) -> dict[str, object]:
    """What IPython does with a cell: its lines go into `linecache` under the cell's file name (which
    no file on disk has), and it runs, compiled under that name, in a namespace named `__main__`."""
    cache_cell(source, filename)
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


@pytest.mark.parametrize(
    "cell_file",
    ["<ipython-input-3-9f86d081884c>", "/tmp/ipykernel_4242/2950834619.py"],
    ids=["ipython", "ipykernel"],
)
def test_remote_traceback_of_a_notebook_cell_shows_the_cell_and_its_line(
    pool: sky.Pool, cell_file: str
) -> None:
    """The worker cannot read a cell, so the client fills the line in from its own linecache."""
    cell = textwrap.dedent(
        """\
        import skyward as sky

        @sky.function
        def evaluate(scores):
            best = max(scores)
            raise LookupError(f"no model scored {best}")
        """
    )
    try:
        evaluate = run_notebook_cell(cell, cell_file)["evaluate"]
        with pytest.raises(LookupError) as caught:
            evaluate([1, 2]) >> pool
    finally:
        linecache.cache.pop(cell_file, None)
    (note,) = caught.value.__notes__
    expected = (
        f'File "{cell_file}", line 6, in evaluate\n    raise LookupError(f"no model scored {{best}}")\n'
    )
    assert expected in note


def test_source_lines_are_filled_in_inside_an_exception_group() -> None:
    """What the worker formatted without the cell's lines gets them from the client's linecache."""
    from skyward.tracebacks import with_source_lines

    cell_file = "<ipython-input-7-0123456789ab>"
    cell = "def fail():\n    raise ExceptionGroup('two', [KeyError(1), KeyError(2)])\n"
    namespace: dict[str, object] = {}
    exec(compile(cell, cell_file, "exec"), namespace)  # as on the worker: no lines for this name
    try:
        namespace["fail"]()  # type: ignore[operator]
    except ExceptionGroup as group:
        worker_text = "".join(traceback.format_exception(group))
    assert "raise ExceptionGroup" not in worker_text
    cache_cell(cell, cell_file)
    try:
        shown = with_source_lines(worker_text)
    finally:
        linecache.cache.pop(cell_file, None)
    assert f'  |   File "{cell_file}", line 2, in fail\n  |     raise ExceptionGroup(' in shown
    assert shown.count("raise ExceptionGroup") == 1


@pytest.mark.timeout(300)
def test_remote_traceback_of_an_includes_package_names_the_users_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An isolated node, like a remote one, runs the package from its own copy of the includes."""
    package = tmp_path / "src" / "includes_traceback_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "steps.py").write_text(
        "def step(batch):\n    size = len(batch)\n    raise IndexError(f'batch of {size} is empty')\n"
    )
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.delitem(sys.modules, "includes_traceback_pkg", raising=False)
    monkeypatch.delitem(sys.modules, "includes_traceback_pkg.steps", raising=False)
    from includes_traceback_pkg.steps import step

    image = sky.Image(includes=[str(package)])
    with sky.Compute(provider=sky.Local(isolated=True), image=image, console=False, logging=False) as compute:
        node_dir = Path(compute.cluster.state["local_dir"]) / "node-0"
        with pytest.raises(IndexError) as caught:
            sky.function(step)([]) >> compute
    (note,) = caught.value.__notes__
    expected = f'File "{package / "steps.py"}", line 3, in step\n    raise IndexError('
    assert expected in note
    assert str(node_dir / "includes") not in note


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
