"""`sky.plugins.keras()`: the image it asks for, and Keras 3 on JAX across real Local workers.

With `plugins=[sky.plugins.jax(cuda="cpu"), sky.plugins.keras(backend="jax")]` the two nodes form
one JAX cluster and `model.fit` is synchronous data-parallel training: each node feeds its own
shard, and both end with the same weights and report the same (global) loss.
"""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from core_support import local_pool

import skyward as sky
from skyward.client.hooks import PoolHooks
from skyward.errors import ConfigurationError
from skyward.image import Image

# --- the factory and its image ----------------------------------------------------------------


@pytest.mark.parametrize("backend", ["pytorch", "JAX", "numpy", "", None, 3])
def test_unknown_backend_fails_at_construction(backend: object) -> None:
    with pytest.raises(ConfigurationError, match=r"backend=.*expected one of 'jax', 'torch', 'tensorflow'"):
        sky.plugins.keras(backend=backend)


def test_configuration_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        sky.plugins.keras(backend="theano")


@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
def test_transform_adds_keras_and_the_backend_variable(backend: str) -> None:
    base = Image(pip=["numpy"], env={"HF_HOME": "/data"})
    plugin = sky.plugins.keras(backend=backend)
    assert plugin.name == "keras"
    assert plugin.transform(base, None) == Image(
        pip=["numpy", "keras"], env={"HF_HOME": "/data", "KERAS_BACKEND": backend}
    )


def test_default_backend_is_jax() -> None:
    assert sky.plugins.keras().transform(Image(), None).env == {"KERAS_BACKEND": "jax"}


def test_only_the_jax_backend_has_worker_hooks() -> None:
    jax_backend = sky.plugins.keras(backend="jax")
    assert jax_backend.around_app is not None and jax_backend.decorate is not None
    for backend in ("torch", "tensorflow"):
        plugin = sky.plugins.keras(backend=backend)
        assert (plugin.around_app, plugin.decorate, plugin.bootstrap, plugin.around_client) == (None,) * 4


def test_jax_then_keras_fold_into_one_image() -> None:
    hooks = PoolHooks((sky.plugins.jax(cuda="cpu"), sky.plugins.keras(backend="jax")))
    assert hooks.transform_image(Image(pip=["numpy"]), None) == Image(
        pip=["numpy", "jax", "keras"], env={"KERAS_BACKEND": "jax"}
    )


def test_sky_plugins_keras_is_the_core_builtin() -> None:
    module = importlib.import_module("skyward.plugins.builtin.keras")
    assert sky.plugins.keras.__module__ == "skyward.plugins.builtin.keras"
    via_sky, direct = sky.plugins.keras(backend="torch"), module.keras(backend="torch")
    assert via_sky.transform(Image(), None) == direct.transform(Image(), None)
    assert callable(sky.plugins.keras)  # still the factory once its module is imported


def test_building_the_plugin_imports_no_framework() -> None:
    code = (
        "import sys, skyward as sky; p = sky.plugins.keras(backend='jax'); p.transform(sky.Image(), None); "
        "print([m for m in ('keras', 'jax', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"


# --- real pools ---------------------------------------------------------------------------------


@sky.function
def fit_on_my_shard() -> dict[str, Any]:
    import jax
    import keras
    import numpy as np

    info = sky.instance_info()
    # This node's shard of a random regression problem: different on every node.
    rng = np.random.default_rng(100 + info.node)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")).astype("float32")
    layers = [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
    model = keras.Sequential(layers)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=4, verbose=0, shuffle=False)
    kernel = np.asarray(jax.device_get(model.layers[-1].kernel.value))
    distribution = keras.distribution.distribution()
    return {
        "node": info.node,
        "env_backend": os.environ.get("KERAS_BACKEND"),
        "backend": keras.backend.backend(),
        "process_count": jax.process_count(),
        "distribution": type(distribution).__name__,
        "mesh_devices": int(np.prod(distribution.device_mesh.shape)),
        "loss": [float(v) for v in history.history["loss"]],
        "kernel": kernel.ravel().tolist(),
    }


def test_keras_fits_data_parallel_across_two_jax_nodes() -> None:
    pool = local_pool(2, plugins=[sky.plugins.jax(cuda="cpu"), sky.plugins.keras(backend="jax")])
    with pool:
        results = fit_on_my_shard() @ pool

    assert [r["node"] for r in results] == [0, 1]
    for r in results:
        assert r["env_backend"] == "jax"
        assert r["backend"] == "jax"
        assert r["process_count"] == 2
        assert r["distribution"] == "DataParallel"
        assert r["mesh_devices"] == 2
        assert len(r["loss"]) == 4 and all(math.isfinite(v) for v in r["loss"])
        assert r["loss"][-1] < r["loss"][0]
    # One synchronous model: the same global loss and the same weights on both nodes.
    assert results[0]["loss"] == pytest.approx(results[1]["loss"], rel=1e-5)
    assert results[0]["kernel"] == pytest.approx(results[1]["kernel"], rel=1e-5, abs=1e-6)


@sky.function
def keras_in_this_thread(pause: float) -> dict[str, Any]:
    import threading

    import keras
    import numpy as np

    time.sleep(pause)
    distribution = keras.distribution.distribution()
    return {
        "env_backend": os.environ.get("KERAS_BACKEND"),
        "backend": keras.backend.backend(),
        "thread": threading.get_ident(),
        "distribution": type(distribution).__name__,
        "mesh_devices": int(np.prod(distribution.device_mesh.shape)),
    }


def test_every_task_thread_sees_the_backend_and_the_distribution() -> None:
    """Keras keeps its global state per thread; the plugin installs it in each task thread."""
    pool = local_pool(1, plugins=[sky.plugins.keras(backend="jax")], worker=sky.Worker(concurrency=2))
    with pool:
        results = sky.gather(*(keras_in_this_thread(0.3) for _ in range(4))) >> pool
    assert len({r["thread"] for r in results}) == 2
    for r in results:
        assert r["env_backend"] == "jax"
        assert r["backend"] == "jax"
        assert r["distribution"] == "DataParallel"
        assert r["mesh_devices"] == 1


@sky.function
def touch_jax() -> int:
    import jax

    return jax.process_count()


def test_keras_listed_before_jax_fails_with_a_hint() -> None:
    """Keras's hook touches JAX devices, after which jax.distributed can no longer start."""
    pool = local_pool(1, plugins=[sky.plugins.keras(backend="jax"), sky.plugins.jax(cuda="cpu")])
    with pool, pytest.raises(Exception, match=r"list sky\.plugins\.jax\(\) before"):
        touch_jax() >> pool
