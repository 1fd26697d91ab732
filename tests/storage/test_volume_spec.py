"""`sky.Volume` is checked when it is built, and a spec's volumes need a store they can reach."""

from __future__ import annotations

import pytest

import skyward as sky

STORE = sky.storage.Storage("https://s3.example.test", "AKIAEXAMPLE", "secret-example-key", path_style=True)


@pytest.mark.parametrize("mount", ["/", "/opt", "/opt/skyward", "/opt/skyward/x", "/root", "/tmp", "data"])
def test_a_reserved_or_relative_mount_is_refused_naming_the_path(mount: str) -> None:
    with pytest.raises(sky.ConfigurationError, match=f"mount={mount!r}"):
        sky.Volume(bucket="b", mount=mount, storage=STORE)


def test_a_prefix_is_stored_without_slashes() -> None:
    assert sky.Volume(bucket="b", mount="/data", prefix="/datasets/v1/").prefix == "datasets/v1"


def test_storage_must_be_a_storage() -> None:
    with pytest.raises(sky.ConfigurationError, match="sky.storage.Storage"):
        sky.Volume(bucket="b", mount="/data", storage="s3://b")  # type: ignore[arg-type]


def test_an_unknown_mode_lists_the_modes() -> None:
    with pytest.raises(sky.ConfigurationError, match='"mount".*"copy".*"auto"'):
        sky.Volume(bucket="b", mount="/data", mode="sync")


def test_a_provider_without_a_store_of_its_own_needs_storage_at_construction() -> None:
    ssh = sky.SSH(hosts=["user@127.0.0.1:22"])
    with pytest.raises(sky.ConfigurationError, match="no object store of its own; pass storage="):
        sky.Spec(provider=ssh, volumes=[sky.Volume(bucket="b", mount="/data")])
    spec = sky.Spec(provider=ssh, volumes=[sky.Volume(bucket="b", mount="/data", storage=STORE)])
    assert spec.volumes[0].storage is STORE


def test_local_takes_volumes_without_a_store_and_does_not_mount_them() -> None:
    spec = sky.Spec(provider=sky.Local(), volumes=[sky.Volume(bucket="b", mount="/data")])
    assert spec.volumes[0].storage is None


def test_the_plan_shows_the_volumes_phase_with_its_keys_masked() -> None:
    store = sky.storage.Storage(
        "https://s3.example.test", "AKIAPLANEXAMPLE", "plan-secret-key-0123456789", path_style=True
    )
    volume = sky.Volume(bucket="b", mount="/data", prefix="sets", storage=store, read_only=False)
    planned = sky.plan(provider=sky.SSH(hosts=["user@127.0.0.1:22"]), volumes=[volume])
    assert [op.name for op in planned.ops] == ["volumes"]
    assert "rclone mount v0:b/sets /data" in planned.script
    assert "plan-secret-key-0123456789" not in planned.script
    assert "secret_access_key = ***" in planned.script
