"""The reference's value objects are frozen dataclasses to their users: `dataclasses.replace` works."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

import skyward as sky
from skyward.client.hooks import PoolHooks
from skyward.errors import ConfigurationError
from skyward.extension.plugin import LaunchCommand, LaunchContext


def my_framework() -> sky.Plugin:
    """The reference's custom-plugin example, as written there."""

    def transform(image, cluster):
        return replace(image, pip=(*image.pip, "my-framework"))

    return sky.Plugin.create("my-framework").with_image_transform(transform)


def test_the_reference_custom_plugin_transform_runs_as_written() -> None:
    image = PoolHooks((my_framework(),)).transform_image(sky.Image(pip=["numpy"]), None)
    assert image == sky.Image(pip=["numpy", "my-framework"])


def test_replace_validates_like_the_constructor() -> None:
    with pytest.raises(ConfigurationError, match=r"Image\(python='banana'\)"):
        replace(sky.Image(), python="banana")


def test_replace_converts_like_the_constructor() -> None:
    assert replace(sky.Image(), pip=["a", "b"]).pip == ("a", "b")
    assert replace(sky.Spec(), nodes=(1, 3)).nodes == sky.Nodes(1, max=3)


@pytest.mark.parametrize(
    ("value", "change"),
    [
        (sky.Image(), {"apt": ("git",)}),
        (sky.PipIndex(url="https://example.invalid/simple"), {"packages": ("torch",)}),
        (sky.Spec(), {"ttl": 0}),
        (sky.Nodes(2), {"max": 4}),
        (sky.Volume(bucket="data", mount="/data"), {"read_only": False}),
        (sky.Options(), {"shutdown_timeout": 5.0}),
        (sky.Worker(), {"concurrency": 4}),
        (sky.LogConfig(), {"level": "DEBUG"}),
        (sky.Plugin.create("p"), {"name": "q"}),
        (LaunchCommand.worker("python3"), {"launcher": "nice"}),
    ],
)
def test_every_public_value_object_can_be_replaced(value: object, change: dict[str, object]) -> None:
    copy = replace(value, **change)
    assert type(copy) is type(value)
    for name, expected in change.items():
        assert getattr(copy, name) == expected
    assert copy != value


def test_fields_and_asdict_list_the_attributes_in_order() -> None:
    assert [f.name for f in dataclasses.fields(sky.Nodes(2))] == ["desired", "min", "max"]
    assert dataclasses.asdict(sky.Nodes(2, max=4)) == {"desired": 2, "min": None, "max": 4}
    assert dataclasses.is_dataclass(LaunchContext)
