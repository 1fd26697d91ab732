"""Spec, Nodes and Volume: every accepted input form, and errors that name the fix."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

import skyward as sky
from skyward import time
from skyward.errors import ConfigurationError
from skyward.image import Image
from skyward.resolve import resolve_compute_args
from skyward.spec import Nodes, S3Volume, Spec, Volume, normalize_nodes

# --- Nodes


def test_nodes_with_only_desired_is_fixed_size() -> None:
    nodes = Nodes(4)
    assert (nodes.desired, nodes.min, nodes.max) == (4, None, None)
    assert (nodes.floor, nodes.ceiling, nodes.elastic) == (4, 4, False)


def test_nodes_with_min_starts_early() -> None:
    assert Nodes(desired=8, min=4).floor == 4


def test_nodes_with_max_is_elastic() -> None:
    nodes = Nodes(desired=2, max=8)
    assert nodes.elastic and nodes.ceiling == 8


def test_nodes_with_zero_desired_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="pass desired=1 or more"):
        Nodes(0)


def test_nodes_with_min_above_desired_names_the_fix() -> None:
    with pytest.raises(ConfigurationError) as error:
        Nodes(desired=2, min=3)
    assert str(error.value) == "Nodes(desired=2, min=3): min cannot exceed desired; lower min to at most 2"


def test_nodes_with_max_below_desired_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="raise max to at least 4"):
        Nodes(desired=4, max=2)


def test_nodes_with_zero_min_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="min must be at least 1"):
        Nodes(desired=2, min=0)


def test_nodes_with_a_fractional_count_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="whole number of nodes"):
        Nodes(2.5)  # type: ignore[arg-type]


def test_nodes_min_and_max_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Nodes(8, 4)  # type: ignore[misc]


def test_normalize_nodes_turns_an_int_into_fixed_nodes() -> None:
    assert normalize_nodes(4) == Nodes(4)


def test_normalize_nodes_turns_a_range_into_elastic_nodes() -> None:
    assert normalize_nodes((2, 8)) == Nodes(desired=2, max=8)


def test_normalize_nodes_keeps_nodes_as_they_are() -> None:
    nodes = Nodes(desired=4, min=2, max=16)
    assert normalize_nodes(nodes) is nodes


def test_normalize_nodes_with_zero_names_the_fix() -> None:
    with pytest.raises(ConfigurationError) as error:
        normalize_nodes(0)
    assert str(error.value) == "nodes=0: a pool needs at least one node; pass nodes=1 or more"


def test_normalize_nodes_with_a_reversed_range_suggests_the_order() -> None:
    with pytest.raises(ConfigurationError, match=r"pass nodes=\(2, 8\)"):
        normalize_nodes((8, 2))


def test_normalize_nodes_with_a_bool_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="expected a count"):
        normalize_nodes(True)


# --- Volume


def test_volume_defaults_to_read_only_without_prefix() -> None:
    volume = Volume(bucket="my-data", mount="/data")
    assert (volume.prefix, volume.read_only, volume.storage) == ("", True, None)


@pytest.mark.parametrize(
    "mount", ["/", "/opt", "/opt/skyward", "/opt/skyward/venv", "/root", "/tmp", "/tmp/"]
)
def test_volume_on_a_reserved_path_suggests_another(mount: str) -> None:
    with pytest.raises(ConfigurationError, match='reserved on workers.*mount="/data"'):
        Volume(bucket="b", mount=mount)


def test_volume_with_a_relative_mount_asks_for_an_absolute_path() -> None:
    with pytest.raises(ConfigurationError, match="must be an absolute path"):
        Volume(bucket="b", mount="data")


def test_volume_below_opt_outside_skyward_is_allowed() -> None:
    assert Volume(bucket="b", mount="/opt/models").mount == "/opt/models"


def test_volume_with_a_path_in_the_bucket_points_to_prefix() -> None:
    with pytest.raises(ConfigurationError, match="prefix="):
        Volume(bucket="my-data/datasets", mount="/data")


def test_s3volume_is_the_older_spelling_of_volume() -> None:
    volume = S3Volume(mount_path="/checkpoints", bucket="b", prefix="models/", read_only=False)
    assert volume == Volume(bucket="b", mount="/checkpoints", prefix="models/", read_only=False)


# --- Spec


def test_spec_defaults_match_the_reference() -> None:
    spec = Spec()
    assert spec.provider is None and spec.accelerator is None
    assert spec.nodes == Nodes(1)
    assert spec.allocation == "spot-if-available"
    assert spec.image == Image()
    assert spec.ttl == 600
    assert spec.volumes == () and spec.plugins == ()


def test_spec_normalizes_nodes() -> None:
    assert Spec(nodes=(2, 8)).nodes == Nodes(desired=2, max=8)


def test_spec_resolves_an_accelerator_name() -> None:
    accelerator = Spec(accelerator="A100").accelerator
    assert accelerator is not None and accelerator.name == "A100"


def test_spec_keeps_an_accelerator_object() -> None:
    from skyward.accelerators import A100

    accelerator = A100(count=8)
    assert Spec(accelerator=accelerator).accelerator == accelerator


def test_spec_with_an_unknown_accelerator_raises_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        Spec(accelerator="NOT-A-GPU-9000")


@pytest.mark.parametrize("allocation", ["spot-if-available", "spot", "on-demand", "cheapest"])
def test_spec_accepts_each_allocation(allocation: str) -> None:
    assert Spec(allocation=allocation).allocation == allocation


def test_spec_stores_always_spot_as_spot() -> None:
    assert Spec(allocation="always-spot").allocation == "spot"


def test_spec_with_unknown_allocation_lists_valid_values() -> None:
    with pytest.raises(ConfigurationError, match="'spot-if-available', 'spot', 'on-demand', 'cheapest'"):
        Spec(allocation="preemptible")


def test_spec_accepts_architecture_aliases() -> None:
    assert Spec(architecture="aarch64").architecture == "arm64"
    assert Spec(architecture="amd64").architecture == "x86_64"


def test_spec_with_unknown_architecture_lists_valid_values() -> None:
    with pytest.raises(ConfigurationError, match='"x86_64", "arm64"'):
        Spec(architecture="riscv")


def test_spec_with_negative_ttl_names_the_fix() -> None:
    with pytest.raises(ConfigurationError, match="ttl=0 to disable"):
        Spec(ttl=-1)


def test_spec_accepts_zero_ttl() -> None:
    assert Spec(ttl=0).ttl == 0


def test_spec_takes_ttl_from_time_helpers_as_whole_seconds() -> None:
    assert Spec(ttl=time.minutes(10)).ttl == 600


def test_spec_turns_a_volume_list_into_a_tuple() -> None:
    volume = Volume(bucket="b", mount="/data")
    assert Spec(volumes=[volume]).volumes == (volume,)


def test_spec_accepts_a_single_volume() -> None:
    volume = Volume(bucket="b", mount="/data")
    assert Spec(volumes=volume).volumes == (volume,)


def test_spec_with_two_volumes_on_one_mount_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="two volumes mount at /data"):
        Spec(volumes=[Volume(bucket="a", mount="/data"), Volume(bucket="b", mount="/data/")])


def test_spec_with_a_non_volume_names_the_type() -> None:
    with pytest.raises(ConfigurationError, match="is not a Volume"):
        Spec(volumes=["/data"])


def test_spec_turns_a_plugin_list_into_a_tuple() -> None:
    plugin = object()
    assert Spec(plugins=[plugin]).plugins == (plugin,)


def test_spec_with_a_non_image_names_the_type() -> None:
    with pytest.raises(ConfigurationError, match="expected a sky.Image"):
        Spec(image={"pip": ["torch"]})  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["vcpus", "memory_gb", "disk_gb", "max_hourly_cost"])
def test_spec_with_a_non_positive_quantity_is_rejected(field: str) -> None:
    with pytest.raises(ConfigurationError, match=f"Spec\\({field}=0\\): must be a positive number"):
        Spec(**{field: 0})


def test_spec_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        Spec(None)  # type: ignore[misc]


def test_spec_survives_cloudpickle() -> None:
    spec = Spec(accelerator="A100", nodes=(1, 4), image=Image(env={"A": "1"}), plugins=[lambda: 1])
    copy = cloudpickle.loads(cloudpickle.dumps(spec))
    assert (copy.accelerator, copy.nodes, copy.image) == (spec.accelerator, spec.nodes, spec.image)


def test_spec_without_plugins_survives_pickle() -> None:
    spec = Spec(nodes=2, volumes=[Volume(bucket="b", mount="/data")])
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_time_helpers_return_float_seconds() -> None:
    assert (time.seconds(5), time.minutes(10), time.hours(1.5), time.days(1)) == (5.0, 600.0, 5400.0, 86400.0)


def test_spec_provider_name_resolves_through_the_registry() -> None:
    from skyward.providers.local import Local

    assert Spec(provider="local").provider == Local()


def test_provider_class_without_parentheses_becomes_its_default_instance() -> None:
    from skyward.providers.local import Local

    assert Spec(provider=Local).provider == Local()


def test_provider_class_that_needs_settings_names_the_fix() -> None:
    from skyward.providers.ssh import SSH

    with pytest.raises(ConfigurationError, match=r"Spec\(provider=SSH\): .*hosts.* pass an instance"):
        Spec(provider=SSH)


@pytest.mark.parametrize("value", [5, object(), ["local"]])
def test_value_that_is_not_a_provider_is_refused_at_construction(value: object) -> None:
    with pytest.raises(ConfigurationError, match=r"expected a provider such as sky.Local\(\)"):
        Spec(provider=value)


# --- keywords beside specs: Compute(Spec(...), Spec(...), image=...)


def test_keywords_beside_specs_apply_to_every_spec_that_does_not_set_them() -> None:
    image = Image(pip=["numpy"])
    local, ssh = Spec(provider=sky.Local()), Spec(provider=sky.SSH(hosts=["me@a", "me@b"]), ttl=60)
    specs, _ = resolve_compute_args(local, ssh, image=image, ttl=60)
    assert [spec.image for spec in specs] == [image, image]
    assert [spec.ttl for spec in specs] == [60, 60]
    assert [type(spec.provider) for spec in specs] == [sky.Local, sky.SSH]
    assert [spec.nodes.desired for spec in specs] == [1, 2]


def test_a_spec_that_sets_the_same_value_as_a_keyword_agrees_with_it() -> None:
    spec = Spec(provider=sky.Local(), accelerator="A100", image=Image(pip=["numpy"]))
    (shared,), _ = resolve_compute_args(spec, accelerator="A100", image=Image(pip=["numpy"]))
    assert shared == spec


def test_a_spec_that_sets_another_value_than_a_keyword_names_the_spec_and_the_field() -> None:
    first, second = Spec(provider=sky.Local()), Spec(provider=sky.Local(), image=Image(pip=["torch"]))
    expected = (
        r"Compute\(\) got image=.*numpy.* for every spec, but spec 2 of 2 \(provider Local\) sets "
        r"image=.*torch.*; keep one: drop image= from that sky.Spec\(...\) to share it"
    )
    with pytest.raises(ConfigurationError, match=expected):
        resolve_compute_args(first, second, image=Image(pip=["numpy"]))


def test_a_field_set_to_its_default_value_counts_as_not_set() -> None:
    """A Spec is a value: Spec(ttl=600) is Spec(), so a shared ttl= fills it in."""
    assert Spec(ttl=600) == Spec() and Spec(ttl=600).is_default("ttl")
    (spec,), _ = resolve_compute_args(Spec(ttl=600), ttl=30)
    assert spec.ttl == 30


def test_a_shared_provider_gives_each_spec_the_nodes_its_hosts_imply() -> None:
    (spec,), _ = resolve_compute_args(Spec(region="eu"), provider=sky.SSH(hosts=["me@a", "me@b"]))
    assert spec.nodes == Nodes(2) and spec.region == "eu"


@sky.function
def shared_env() -> str:
    import os

    return os.environ["SHARED_BY_EVERY_SPEC"]


def test_a_pool_of_several_specs_runs_with_the_image_given_beside_them() -> None:
    with sky.Compute(
        sky.Spec(provider=sky.Local(), nodes=1),
        sky.Spec(provider=sky.Local(), nodes=2),
        image=sky.Image(env={"SHARED_BY_EVERY_SPEC": "yes"}),
        options=sky.Options(selection="first"),
        console=False,
        logging=False,
    ) as pool:
        assert shared_env() >> pool == "yes"
