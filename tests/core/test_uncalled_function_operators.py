"""`work >> pool` with `work` a `@sky.function` not called (parentheses forgotten) raises a TypeError
that says to call it, for every operator a pending call has, instead of Python's bare
"unsupported operand type(s)"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import skyward as sky

pytestmark = pytest.mark.timeout(60)


@sky.function
def work(x: int = 1) -> int:
    return x * 2


@pytest.mark.parametrize(
    ("op", "dispatch"),
    [
        (">>", lambda target: work >> target),
        ("@", lambda target: work @ target),
        (">", lambda target: work > target),
    ],
)
def test_dispatching_the_function_itself_says_to_call_it(
    pool: sky.Pool, op: str, dispatch: Callable[[Any], Any]
) -> None:
    expected = rf"call it with its arguments first, work\(\.\.\.\) {op} pool"
    with pytest.raises(TypeError, match=expected) as caught:
        dispatch(pool)
    assert "unsupported operand" not in str(caught.value)
    assert "@sky.function itself" in str(caught.value)


def test_dispatching_the_function_to_the_sky_module_says_the_same() -> None:
    with pytest.raises(TypeError, match=r"work\(\.\.\.\) >> pool"):
        work >> sky


@pytest.mark.parametrize(
    "combine",
    [
        lambda: work & work(2),
        lambda: work(1) & work,
        lambda: (work(1) & work(2)) & work,
        lambda: 5 & work,
    ],
    ids=["left", "right", "after-a-group", "reflected"],
)
def test_grouping_the_function_itself_says_to_call_it(combine: Callable[[], Any]) -> None:
    with pytest.raises(TypeError, match=r"& groups calls.*\(work\(\.\.\.\) & other\(\.\.\.\)\) >> pool"):
        combine()


def test_the_called_function_still_dispatches(pool: sky.Pool) -> None:
    assert work(3) >> pool == 6
    assert (work(1) & work(2)) >> pool == (2, 4)
