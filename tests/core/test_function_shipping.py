"""How a function travels: by reference once, by value at every dispatch (client/shipping.py)."""

from __future__ import annotations

import json
import textwrap
import types

import cloudpickle
from core_support import local_pool

import skyward as sky
from skyward.client.shipping import pickled_by_reference, ship


def _main_function(source: str, **globals_: object) -> tuple[types.FunctionType, dict[str, object]]:
    """A function defined the way a script's are: in a `__main__` namespace, so pickled by value."""
    namespace: dict[str, object] = {"__name__": "__main__", **globals_}
    exec(textwrap.dedent(source), namespace)  # noqa: S102 - test fixture code
    (fn,) = (v for v in namespace.values() if isinstance(v, types.FunctionType))
    return fn, namespace


def test_an_importable_function_is_pickled_once() -> None:
    first = ship(json.dumps, "dumps")
    assert ship(json.dumps, "dumps") is first
    assert pickled_by_reference(json.dumps)


def test_a_main_function_is_pickled_at_every_dispatch() -> None:
    fn, _ = _main_function("def double(x):\n    return 2 * x\n")
    assert not pickled_by_reference(fn)
    first = ship(fn, "double")
    second = ship(fn, "double")
    assert second is not first
    assert second.data == first.data


def test_a_closure_is_pickled_by_value() -> None:
    limit = 3

    def over(x: int) -> bool:
        return x > limit

    assert not pickled_by_reference(over)


def test_a_module_registered_by_value_is_not_reused() -> None:
    ship(textwrap.dedent, "dedent")
    cloudpickle.register_pickle_by_value(textwrap)
    try:
        assert not pickled_by_reference(textwrap.dedent)
        assert ship(textwrap.dedent, "dedent") is not ship(textwrap.dedent, "dedent")
    finally:
        cloudpickle.unregister_pickle_by_value(textwrap)


def test_a_global_rebound_between_dispatches_reaches_the_worker() -> None:
    over, namespace = _main_function("def over(x):\n    return x > LIMIT\n", LIMIT=1)
    remote = sky.function(over)
    with local_pool(nodes=1) as pool:
        assert (remote(3) >> pool) is True
        namespace["LIMIT"] = 5
        assert (remote(3) >> pool) is False


def test_an_importable_function_runs_by_reference_on_the_worker() -> None:
    with local_pool(nodes=1) as pool:
        assert pool.map(json.dumps, [[1], {"a": 2}]) == ["[1]", '{"a": 2}']
        assert (sky.function(json.dumps)([3]) >> pool) == "[3]"
