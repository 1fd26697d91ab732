"""Streams both ways: generator tasks, iterator arguments, and the bounds and cancellation between them."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from core_support import assert_pool_works, wait_until

import skyward as sky

pytestmark = pytest.mark.timeout(60)

#: Items a generator task may run ahead of its consumer (the pool's STREAM_WINDOW).
WINDOW = 16


def produced(path: Path) -> int:
    """How many items a recording generator has produced so far."""
    try:
        return len(path.read_text().split())
    except FileNotFoundError:
        return 0


@sky.function
def squares(n: int) -> Iterator[int]:
    for i in range(n):
        yield i * i


@sky.function
def recording_counter(path: str) -> Iterator[int]:
    """Counts forever, appending each number to `path` as it is produced, and notes when closed."""
    try:
        with open(path, "a") as log:
            for i in itertools.count():
                log.write(f"{i}\n")
                log.flush()
                yield i
    finally:
        with open(path + ".closed", "w") as marker:
            marker.write("closed")


@sky.function
def yield_then_wait_for(go: str) -> Iterator[str]:
    yield "first"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not Path(go).exists():
        time.sleep(0.01)
    yield "saw go" if Path(go).exists() else "never saw go"


@sky.function
def take(xs: Iterator[int], n: int) -> list[int]:
    return list(itertools.islice(xs, n))


@sky.function
def total(xs: Iterator[int]) -> tuple[bool, int]:
    return isinstance(xs, list), sum(xs)


@sky.function
def plus_one(xs: Iterator[int]) -> Iterator[int]:
    for x in xs:
        yield x + 1


@sky.function
def fails_at_three() -> Iterator[int]:
    yield 0
    yield 1
    yield 2
    raise ValueError("no item 3")


@sky.function
def read_until_error(xs: Iterator[int]) -> tuple[list[int], str]:
    seen: list[int] = []
    try:
        for x in xs:
            seen.append(x)
    except KeyError as exc:
        return seen, repr(exc)
    return seen, "no error"


def test_generator_task_returns_its_items(pool: sky.Pool) -> None:
    assert list(squares(6) >> pool) == [0, 1, 4, 9, 16, 25]


def test_generator_task_of_no_items_ends_at_once(pool: sky.Pool) -> None:
    assert list(squares(0) >> pool) == []


def test_generator_yields_first_item_before_the_generator_finishes(pool: sky.Pool, tmp_path: Path) -> None:
    go = tmp_path / "go"
    items = yield_then_wait_for(str(go)) >> pool
    assert next(items) == "first"
    go.touch()  # the remote generator is still running: it only finishes once it sees this
    assert list(items) == ["saw go"]


def test_generator_runs_at_most_a_window_ahead_of_the_consumer(pool: sky.Pool, tmp_path: Path) -> None:
    log = tmp_path / "produced"
    items = recording_counter(str(log)) >> pool
    try:
        assert next(items) == 0
        time.sleep(0.5)  # room to run ahead, if it were not bounded
        assert 1 <= produced(log) <= 1 + WINDOW + 1
        consumed = [next(items) for _ in range(40)]
        assert consumed == list(range(1, 41))
        time.sleep(0.5)
        assert 41 <= produced(log) <= 41 + WINDOW + 1
    finally:
        items.close()


def test_breaking_out_of_the_loop_cancels_the_remote_generator(pool: sky.Pool, tmp_path: Path) -> None:
    log = tmp_path / "produced"
    for item in recording_counter(str(log)) >> pool:
        if item == 5:
            break
    closed = wait_until(lambda: Path(f"{log}.closed").exists(), timeout=10)
    assert closed, "the remote generator was not closed"
    stopped_at = produced(log)
    time.sleep(0.3)
    assert produced(log) == stopped_at <= 6 + WINDOW + 1
    assert_pool_works(pool)


def test_closing_the_iterator_frees_the_slot_for_other_tasks(pool: sky.Pool, tmp_path: Path) -> None:
    items = pool.run(recording_counter(str(tmp_path / "produced")), target=0)
    assert next(items) == 0
    items.close()
    assert [list(pool.run(squares(3), target=0)) for _ in range(3)] == [[0, 1, 4]] * 3


def test_exception_in_remote_generator_is_raised_at_the_failing_item(pool: sky.Pool) -> None:
    received: list[int] = []
    with pytest.raises(ValueError, match="no item 3"):
        for item in fails_at_three() >> pool:
            received.append(item)
    assert received == [0, 1, 2]
    assert_pool_works(pool)


def test_iterator_argument_is_pulled_lazily(pool: sky.Pool) -> None:
    pulled: list[int] = []

    def endless() -> Iterator[int]:
        for i in itertools.count():
            pulled.append(i)
            yield i

    assert take(endless(), 40) >> pool == list(range(40))
    assert 40 <= len(pulled) <= 40 + WINDOW  # pulled in batches, never drained up front


def test_iterator_annotated_parameter_streams_a_list(pool: sky.Pool) -> None:
    assert total([1, 2, 3, 4]) >> pool == (False, 10)


def test_iterator_annotated_parameter_streams_a_keyword_argument(pool: sky.Pool) -> None:
    assert total(xs=range(5)) >> pool == (False, 10)


def test_bidirectional_stream_maps_every_item_in_order(pool: sky.Pool) -> None:
    assert list(plus_one(iter(range(100))) >> pool) == list(range(1, 101))


def test_bidirectional_stream_starts_before_the_input_ends(pool: sky.Pool, tmp_path: Path) -> None:
    go = tmp_path / "go"

    def held_back() -> Iterator[int]:
        yield 1
        assert wait_until(go.exists, timeout=10)
        yield 2

    items = plus_one(held_back()) >> pool
    assert next(items) == 2  # produced while the client's iterator is still open
    go.touch()
    assert list(items) == [3]


def test_exception_in_client_iterator_reaches_the_worker(pool: sky.Pool) -> None:
    def breaks_after_two() -> Iterator[int]:
        yield 1
        yield 2
        raise KeyError("client-side")

    assert read_until_error(breaks_after_two()) >> pool == ([1, 2], "KeyError('client-side')")


def test_unhandled_client_iterator_error_comes_back_to_the_caller(pool: sky.Pool) -> None:
    def broken() -> Iterator[int]:
        yield 1
        raise KeyError("client-side")

    with pytest.raises(KeyError, match="client-side"):
        total(broken()) >> pool
    assert_pool_works(pool)


def test_broadcast_of_a_generator_gives_each_nodes_items_as_a_list(pool: sky.Pool) -> None:
    assert squares(40) @ pool == [[i * i for i in range(40)]] * 2


def test_future_of_a_generator_resolves_to_all_its_items(pool: sky.Pool) -> None:
    assert (squares(30) > pool).result(timeout=30) == [i * i for i in range(30)]


def test_gather_and_map_collect_generator_items_per_call(pool: sky.Pool) -> None:
    assert sky.gather(squares(3), squares(2)) >> pool == ([0, 1, 4], [0, 1])
    assert pool.map(squares.fn, [1, 20])[1] == [i * i for i in range(20)]


def test_iterator_argument_to_a_broadcast_is_refused_before_dispatch(pool: sky.Pool) -> None:
    items = iter(range(10))
    expected = r"Argument 0 of total\(\) is an iterator .* Pass a list"
    with pytest.raises(sky.ConfigurationError, match=expected):
        total(items) @ pool
    assert next(items) == 0  # nothing was read from it
    assert_pool_works(pool)


def test_reiterable_argument_to_a_broadcast_reaches_every_node_whole(pool: sky.Pool) -> None:
    assert total(range(10)) @ pool == [(False, 45)] * pool.current_nodes()
