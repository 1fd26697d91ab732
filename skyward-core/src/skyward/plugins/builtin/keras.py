"""`sky.plugins.keras()`: Keras 3 on the workers, with its backend chosen before Keras is imported.

Keras reads ``KERAS_BACKEND`` once, when it is first imported, so the backend travels as
``Image.env``: the worker's environment has it from spawn (and again from the handshake), before any
task can import Keras. The transform also adds ``keras`` to ``Image.pip``.

With ``backend="jax"`` an ``around_app`` hook (once per worker process, on its first task) makes
``keras.distribution.DataParallel`` over ``jax.devices()`` the current distribution. Combined with
``sky.plugins.jax()`` listed *first*, ``jax.devices()`` spans every node, so ``model.fit`` is
synchronous data-parallel training across the pool:

- each node feeds its own shard (``auto_shard_dataset=False``): the arrays a task passes to
  ``fit`` are that node's part of the global batch, which is how Skyward splits data
  (``sky.shard``), and what lets NumPy arrays be used at all across processes;
- every process gets the same Keras seed (process 0's, broadcast), so weights start identical on
  every node, as data parallelism requires. That seeds Python's ``random`` too (Keras draws
  initializer seeds from it); NumPy's global generator is left as it was, so random data drawn
  with ``np.random`` stays different per node.

Keras keeps its global state per thread, so a ``decorate`` hook installs the same distribution and
seed in any task thread that lacks them. For ``"torch"`` and ``"tensorflow"`` the plugin sets the
backend and nothing else: pair it with that framework's own distributed setup
(``sky.plugins.torch()``).

This module imports only the standard library and skyward; Keras and JAX are imported by the
hooks, on the workers.
"""

from __future__ import annotations

import functools
import os
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from skyward.errors import ConfigurationError
from skyward.extension.plugin import Plugin

__all__ = ["BACKENDS", "keras"]

#: Keras 3 backends the plugin accepts.
BACKENDS = ("jax", "torch", "tensorflow")


class _JaxSetup:
    """What ``around_app`` decided on this worker, for the task threads that come after it.

    Built empty on the client and shipped with the plugin; filled on the worker.
    """

    def __init__(self) -> None:
        self.distribution: Any = None
        self.seed: int | None = None


def _transform(backend: str, image: Any, cluster: Any) -> Any:
    return image.with_pip("keras").with_env(KERAS_BACKEND=backend)


def _import_keras(backend: str) -> Any:
    """Import Keras, making sure it runs on ``backend``."""
    os.environ.setdefault("KERAS_BACKEND", backend)
    import keras as keras_lib

    actual = keras_lib.backend.backend()
    if actual != backend:
        raise RuntimeError(
            f"sky.plugins.keras(backend={backend!r}): Keras is running on the {actual!r} backend. "
            "Keras picks its backend on first import; something imported it before KERAS_BACKEND was "
            f"set, or KERAS_BACKEND was overridden (it is {os.environ.get('KERAS_BACKEND')!r})."
        )
    return keras_lib


def _agree_on_seed() -> int:
    """Process 0's random seed, the same on every JAX process (a collective: all must call it)."""
    import numpy as np
    from jax.experimental import multihost_utils

    mine = np.asarray(random.SystemRandom().getrandbits(31), dtype=np.int32)
    return int(multihost_utils.broadcast_one_to_all(mine))


def _seed_this_thread(keras_lib: Any, seed: int) -> None:
    """Seed Keras, leaving NumPy's global generator as it was.

    Python's ``random`` is seeded too, on purpose: Keras draws unseeded initializers' seeds from it.
    """
    import numpy as np

    numpy_state = np.random.get_state()
    try:
        keras_lib.utils.set_random_seed(seed)
    finally:
        np.random.set_state(numpy_state)


def _install(setup: _JaxSetup) -> None:
    """Make ``setup`` current in this thread, unless the thread already has a distribution."""
    import keras as keras_lib

    if setup.distribution is None or keras_lib.distribution.distribution() is not None:
        return
    keras_lib.distribution.set_distribution(setup.distribution)
    if setup.seed is not None:
        _seed_this_thread(keras_lib, setup.seed)


@contextmanager
def _around_app_jax(setup: _JaxSetup, info: Any) -> Iterator[None]:
    keras_lib = _import_keras("jax")
    import jax as jax_lib

    setup.distribution = keras_lib.distribution.DataParallel(
        devices=jax_lib.devices(), auto_shard_dataset=False
    )
    setup.seed = _agree_on_seed() if jax_lib.process_count() > 1 else None
    _install(setup)
    yield


def _decorate_jax(setup: _JaxSetup, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        _install(setup)
        return fn(*args, **kwargs)

    return run


def keras(*, backend: str = "jax") -> Plugin:
    """Keras 3 on every worker, running on ``backend`` (``"jax"``, ``"torch"`` or ``"tensorflow"``).

    For multi-node training on JAX, list the JAX plugin first::

        plugins=[sky.plugins.jax(), sky.plugins.keras(backend="jax")]
    """
    if not isinstance(backend, str) or backend not in BACKENDS:
        valid = ", ".join(repr(b) for b in BACKENDS)
        raise ConfigurationError(
            f"sky.plugins.keras(backend={backend!r}): expected one of {valid}; "
            'pass e.g. sky.plugins.keras(backend="jax")'
        )
    plugin = Plugin.create("keras").with_image_transform(functools.partial(_transform, backend))
    if backend == "jax":
        setup = _JaxSetup()
        plugin = plugin.with_around_app(functools.partial(_around_app_jax, setup)).with_decorator(
            functools.partial(_decorate_jax, setup)
        )
    return plugin
