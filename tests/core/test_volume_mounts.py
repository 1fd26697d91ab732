"""`Volume(mount=...)`: checked at construction in its normalised spelling, so `//root`, `/data/..`
and the system's own folders are refused, and `/data/` is stored as `/data`."""

from __future__ import annotations

import pytest

import skyward as sky
from skyward.errors import ConfigurationError
from skyward.spec import Spec, Volume


@pytest.mark.parametrize("mount", ["//root", "///", "//tmp/", "/./root", "//opt//skyward/venv"])
def test_a_reserved_mount_spelled_another_way_is_still_refused(mount: str) -> None:
    with pytest.raises(ConfigurationError, match=r"reserved on workers.*mount=\"/data\""):
        Volume(bucket="b", mount=mount)


@pytest.mark.parametrize(
    "mount",
    ["/etc", "/etc/ssh", "/usr", "/usr/local/lib", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/dev",
     "/proc", "/sys", "/run", "/home", "/var", "/opt/skyward/venv"],
)
def test_system_folders_and_what_is_below_them_are_reserved(mount: str) -> None:
    with pytest.raises(ConfigurationError, match=f"Volume\\(mount='{mount}'\\): .* is reserved on workers"):
        sky.Volume(bucket="b", mount=mount)


@pytest.mark.parametrize("mount", ["/data/../etc", "/data/..", "/mnt/../data"])
def test_a_mount_that_goes_up_is_refused(mount: str) -> None:
    with pytest.raises(ConfigurationError, match=r"cannot go up with '\.\.'"):
        Volume(bucket="b", mount=mount)


def test_a_mount_with_a_control_character_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="control character"):
        Volume(bucket="b", mount="/data\n")


@pytest.mark.parametrize(
    ("given", "stored"),
    [("/data/", "/data"), ("//data", "/data"), ("/data//set/./x", "/data/set/x"), ("/mnt/data", "/mnt/data")],
)
def test_a_mount_is_stored_normalised(given: str, stored: str) -> None:
    assert Volume(bucket="b", mount=given).mount == stored


@pytest.mark.parametrize("mount", ["/data", "/mnt", "/opt/models", "/home/me/data", "/var/data", "/tmp/data"])
def test_folders_of_your_own_are_accepted(mount: str) -> None:
    assert Volume(bucket="b", mount=mount).mount == mount


def test_two_spellings_of_one_mount_point_in_a_spec_are_one_mount() -> None:
    with pytest.raises(ConfigurationError, match="two volumes mount at /data"):
        Spec(volumes=[Volume(bucket="a", mount="/data"), Volume(bucket="b", mount="//data/")])


def test_the_older_s3volume_is_checked_the_same_way() -> None:
    with pytest.raises(ConfigurationError, match="reserved on workers"):
        sky.S3Volume(mount_path="//root", bucket="b")
