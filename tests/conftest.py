"""What every test directory shares.

Test modules are not importable on a worker (a node's venv, a host's home folder), so each one is
shipped by value, as a user's script is: a `@sky.function` defined in a test travels whole.
"""

from __future__ import annotations

from collections.abc import Iterator

import cloudpickle
import pytest


@pytest.fixture(autouse=True, scope="module")
def _ship_test_module_by_value(request: pytest.FixtureRequest) -> Iterator[None]:
    module = request.module
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)
