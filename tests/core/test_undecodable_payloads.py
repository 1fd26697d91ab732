"""A value that pickles on one side but will not unpickle on the other fails its task, and only it.

The usual cause is a class from a module only one side has: the client's own package that the
image does not ship, or a module the task imports on the worker. The frame still arrives whole, so
the channel goes on: the task fails with a `SerializationError` naming the module and the fix, and
the node takes the next task at once.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from core_support import assert_pool_works, local_pool

import skyward as sky

pytestmark = pytest.mark.timeout(60)

FIX = r"importable on both sides"


@pytest.fixture
def client_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A module importable here but not on a Local worker (it gets none of the client's sys.path)."""
    source = tmp_path / "client_src"
    source.mkdir()
    (source / "client_only_things.py").write_text(
        "class Thing:\n    def __init__(self, n):\n        self.n = n\n"
    )
    monkeypatch.syspath_prepend(str(source))
    module = importlib.import_module("client_only_things")
    yield module
    sys.modules.pop("client_only_things", None)


@pytest.fixture
def worker_only(tmp_path: Path) -> sky.Image:
    """An image that ships a module the client cannot import."""
    source = tmp_path / "worker_src"
    source.mkdir()
    (source / "worker_only_things.py").write_text("class Thing:\n    pass\n")
    return sky.Image(includes=[str(source)])


@sky.function
def echo(value: object) -> object:
    return value


@sky.function
def add(a: int, b: int) -> int:
    return a + b


@sky.function
def count_items(items: Iterator[object]) -> int:
    return sum(1 for _ in items)


@sky.function
def make_worker_only_thing() -> object:
    import worker_only_things

    return worker_only_things.Thing()


@sky.function
def yield_then_worker_only_thing() -> Iterator[object]:
    import worker_only_things

    yield 1
    yield worker_only_things.Thing()
    yield 3


def test_argument_the_worker_cannot_unpickle_fails_that_task_and_names_the_module(client_only) -> None:
    with local_pool(1) as compute:
        expected = r"arguments .* on the worker.*client_only_things"
        with pytest.raises(sky.SerializationError, match=expected) as caught:
            echo(client_only.Thing(1)) >> compute
        assert "Image(includes=" in str(caught.value)
        assert add(2, 3) >> compute == 5
        assert_pool_works(compute)


def test_argument_the_worker_cannot_unpickle_fails_under_every_operator(client_only) -> None:
    with local_pool(2) as compute:
        thing = client_only.Thing(1)
        with pytest.raises(sky.SerializationError, match=FIX):
            (echo(thing) > compute).result(timeout=30)
        with pytest.raises(sky.SerializationError, match=FIX):
            echo(thing) @ compute
        with pytest.raises(sky.SerializationError, match=FIX):
            (add(1, 1) & echo(thing)) >> compute
        assert_pool_works(compute)


def test_return_value_the_client_cannot_unpickle_fails_that_task_and_names_the_module(worker_only) -> None:
    with local_pool(1, image=worker_only) as compute:
        expected = r"return value of make_worker_only_thing\(\) .* on the client.*worker_only_things"
        with pytest.raises(sky.SerializationError, match=expected):
            make_worker_only_thing() >> compute
        with pytest.raises(sky.SerializationError, match=expected):
            (make_worker_only_thing() > compute).result(timeout=30)
        assert add(2, 3) >> compute == 5
        assert_pool_works(compute)


def test_generator_item_the_client_cannot_unpickle_ends_the_stream_with_the_reason(worker_only) -> None:
    with local_pool(1, image=worker_only) as compute:
        received: list[object] = []
        with pytest.raises(sky.SerializationError, match=r"item yielded by .*worker_only_things"):
            for item in yield_then_worker_only_thing() >> compute:
                received.append(item)
        assert received == [1]
        assert add(2, 3) >> compute == 5


def test_iterator_argument_item_the_worker_cannot_unpickle_raises_in_the_task(client_only) -> None:
    with local_pool(1) as compute:
        items = iter([1, client_only.Thing(2), 3])
        expected = r"item of an iterator argument .*client_only_things"
        with pytest.raises(sky.SerializationError, match=expected):
            count_items(items) >> compute
        assert add(2, 3) >> compute == 5


def test_plugin_the_worker_cannot_unpickle_fails_the_start_naming_the_module(client_only) -> None:
    plugin = sky.Plugin.create("client-only").with_decorator(client_only.Thing)
    compute = local_pool(1, plugins=[plugin])
    with pytest.raises(Exception, match=r"set-up .* on the worker.*client_only_things"):
        compute.start()
    compute.stop()
