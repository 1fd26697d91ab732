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


def test_a_main_function_that_captures_nothing_mutable_is_pickled_once() -> None:
    fn, _ = _main_function("import json\ndef double(x):\n    return json.dumps(FACTOR * x)\n", FACTOR=2)
    assert not pickled_by_reference(fn)
    assert ship(fn, "double") is ship(fn, "double")


def test_a_rebound_global_is_pickled_again() -> None:
    fn, namespace = _main_function("def over(x):\n    return x > LIMIT\n", LIMIT=1)
    first = ship(fn, "over")
    namespace["LIMIT"] = 5
    assert ship(fn, "over").data != first.data


def test_a_global_rebound_to_an_equal_value_of_another_type_is_pickled_again() -> None:
    fn, namespace = _main_function("def over(x):\n    return x > LIMIT\n", LIMIT=1)
    first = ship(fn, "over")
    namespace["LIMIT"] = True  # 1 == True, but the worker must get True
    assert ship(fn, "over").data != first.data


def test_a_main_function_capturing_a_list_is_pickled_at_every_dispatch() -> None:
    fn, namespace = _main_function("def pick(i):\n    return ITEMS[i]\n", ITEMS=[1, 2])
    first = ship(fn, "pick")
    second = ship(fn, "pick")
    assert second is not first
    assert second.data == first.data
    namespace["ITEMS"].append(3)  # changed in place, not rebound
    assert ship(fn, "pick").data != first.data


def test_a_main_function_capturing_a_class_of_the_script_is_pickled_at_every_dispatch() -> None:
    fn, namespace = _main_function("def make():\n    return Box()\n")
    namespace["Box"] = type("Box", (), {"__module__": "__main__"})
    assert ship(fn, "make") is not ship(fn, "make")


def test_a_main_function_calling_a_method_bound_to_a_list_is_pickled_at_every_dispatch() -> None:
    items: list[int] = []
    fn, _ = _main_function("def add(x):\n    return ADD(x)\n", ADD=items.append)
    first = ship(fn, "add")
    items.append(1)  # the list travels with its bound method
    assert ship(fn, "add").data != first.data


def test_a_closure_made_again_over_the_same_values_is_pickled_once() -> None:
    def scaled(factor: int) -> types.FunctionType:
        def scale(x: int) -> int:
            return x * factor

        return scale

    first = ship(scaled(3), "scale")
    assert ship(scaled(3), "scale") is first
    assert ship(scaled(4), "scale").data != first.data


def test_a_helper_of_the_script_redefined_between_dispatches_is_pickled_again() -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec("def helper(x):\n    return x + 1\ndef task(x):\n    return helper(x)\n", namespace)  # noqa: S102
    task = namespace["task"]
    first = ship(task, "task")
    assert ship(task, "task") is first
    exec("def helper(x):\n    return x + 2\n", namespace)  # noqa: S102
    assert ship(task, "task").data != first.data


def test_a_list_changed_in_place_between_dispatches_reaches_the_worker() -> None:
    pick, namespace = _main_function("def pick():\n    return list(ITEMS)\n", ITEMS=[1])
    remote = sky.function(pick)
    with local_pool(nodes=1) as pool:
        assert (remote() >> pool) == [1]
        namespace["ITEMS"].append(2)
        assert (remote() >> pool) == [1, 2]


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
