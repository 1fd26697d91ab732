"""`sky.plugins.cuml()`: RAPIDS cuML on the workers, scikit-learn estimators running on the GPU.

The image transform installs the RAPIDS wheels that the RAPIDS pip instructions list for cuML
(`cudf-cu12` and `cuml-cu12`, or the `-cu13` builds) and routes exactly those packages to NVIDIA's
index (https://pypi.nvidia.com) through a scoped `PipIndex`; everything else keeps resolving from
the default index. On the worker, `cuml.accel.install()` runs once per worker process before the
first task (`around_app`), and once per executor subprocess under `executor="process"`
(`around_process`), so unchanged scikit-learn code (`from sklearn.cluster import KMeans`) is
dispatched to cuML.

`cuml` is imported inside the hooks only: building the plugin on the client imports nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skyward.errors import ConfigurationError, PluginError
from skyward.extension.plugin import Plugin
from skyward.image import PipIndex

__all__ = ["RAPIDS_INDEX_URL", "SUPPORTED_CUDA", "cuml", "rapids_packages"]

#: NVIDIA's package index, where RAPIDS publishes its wheels.
RAPIDS_INDEX_URL = "https://pypi.nvidia.com"

#: CUDA majors RAPIDS publishes pip wheels for (the `-cu12` / `-cu13` package suffixes).
SUPPORTED_CUDA: tuple[str, ...] = ("cu12", "cu13")

#: What the RAPIDS pip instructions install for cuML, without the CUDA suffix.
_RAPIDS = ("cudf", "cuml")


def rapids_packages(cuda: str = "cu12") -> tuple[str, ...]:
    """The pip names installed for `cuda`: `("cudf-cu12", "cuml-cu12")` for the default."""
    _check_cuda(cuda)
    return tuple(f"{name}-{cuda}" for name in _RAPIDS)


def _check_cuda(cuda: object) -> None:
    if cuda not in SUPPORTED_CUDA:
        valid = ", ".join(repr(c) for c in SUPPORTED_CUDA)
        raise ConfigurationError(
            f"sky.plugins.cuml(cuda={cuda!r}): RAPIDS publishes pip wheels for {valid}; "
            'pass e.g. cuda="cu12" (match the CUDA major of the worker\'s driver)'
        )


@contextmanager
def _accelerate(info: Any) -> Iterator[None]:
    """Install cuML's scikit-learn accelerator in this process (idempotent in cuML itself)."""
    try:
        accel = importlib.import_module("cuml.accel")
    except ImportError as exc:
        raise PluginError(
            f"the cuml plugin could not import cuml.accel on this worker ({exc}); the plugin's image "
            "transform installs cudf/cuml from https://pypi.nvidia.com, so check the bootstrap log, "
            "and note that cuml.accel needs cuML 25.02 or newer"
        ) from exc
    accel.install()
    yield


def cuml(*, cuda: str = "cu12") -> Plugin:
    """GPU-accelerated scikit-learn through RAPIDS cuML (`cuml.accel`).

    `cuda` picks the wheel build: `"cu12"` (default) or `"cu13"`. Combine with
    `sky.plugins.sklearn()` to also distribute joblib work:
    `plugins=[sky.plugins.cuml(), sky.plugins.sklearn()]`.
    """
    packages = rapids_packages(cuda)
    index = PipIndex(url=RAPIDS_INDEX_URL, packages=packages)

    def transform(image: Any, cluster: Any) -> Any:
        return image.with_pip(*packages).with_pip_index(index)

    return (
        Plugin.create("cuml")
        .with_image_transform(transform)
        .with_around_app(_accelerate)
        .with_around_process(_accelerate)
    )

