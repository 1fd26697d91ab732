"""`sky.SSH(...)` as a value: host strings, node counts, and where it is registered."""

from __future__ import annotations

import getpass

import pytest

import skyward as sky
from skyward.providers.ssh import SSHHost, parse_host


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu1", SSHHost("gpu1", 22, getpass.getuser())),
        ("ubuntu@gpu1", SSHHost("gpu1", 22, "ubuntu")),
        ("ubuntu@10.0.0.5:2222", SSHHost("10.0.0.5", 2222, "ubuntu")),
        ("[::1]:2200", SSHHost("::1", 2200, getpass.getuser())),
        ("me@[fe80::1]", SSHHost("fe80::1", 22, "me")),
        ("fe80::2", SSHHost("fe80::2", 22, getpass.getuser())),
    ],
)
def test_host_strings_parse_as_user_at_host_colon_port(text: str, expected: SSHHost) -> None:
    assert parse_host(text) == expected


@pytest.mark.parametrize("text", ["", "user@", "host:0", "host:99999", "host:ssh", "[::1"])
def test_bad_host_strings_are_refused_at_construction(text: str) -> None:
    with pytest.raises(sky.ConfigurationError, match="SSH\\(hosts="):
        sky.SSH(hosts=[text])


def test_hosts_accepts_a_list_or_one_string_and_needs_at_least_one() -> None:
    assert sky.SSH(hosts=["a", "b"]).hosts == ("a", "b")
    assert sky.SSH(hosts="a").hosts == ("a",)
    with pytest.raises(sky.ConfigurationError, match="at least one"):
        sky.SSH(hosts=[])


def test_nodes_default_to_the_number_of_hosts() -> None:
    compute = sky.Compute(provider=sky.SSH(hosts=["a", "b"]))
    assert compute.specs[0].nodes.desired == 2
    assert sky.Spec(provider=sky.SSH(hosts=["a", "b", "c"]), nodes=2).nodes.desired == 2


def test_more_nodes_than_hosts_is_a_configuration_error() -> None:
    with pytest.raises(sky.ConfigurationError, match="SSH has 2 host"):
        sky.Compute(provider=sky.SSH(hosts=["a", "b"]), nodes=3)
    with pytest.raises(sky.ConfigurationError, match="SSH has 1 host"):
        sky.Spec(provider=sky.SSH(hosts=["a"]), nodes=(1, 4))


def test_ssh_is_a_core_provider_found_by_name() -> None:
    from skyward.extension.registry import provider_class

    assert sky.SSH is provider_class("ssh")
    assert sky.SSH(hosts=["a"]).name == "ssh"


def test_key_file_and_known_hosts_take_paths() -> None:
    from pathlib import Path

    config = sky.SSH(hosts=["a"], key_file=Path("/k"), known_hosts=Path("/kh"))
    assert (config.key_file, config.known_hosts) == ("/k", "/kh")


def test_a_pool_key_is_created_once_private_and_removable(tmp_path, monkeypatch) -> None:
    from skyward.transport.ssh_connect import pool_key, remove_pool_key

    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path))
    path, public = pool_key("pool-1234")
    assert path.parent == tmp_path / "keys"
    assert path.stat().st_mode & 0o777 == 0o600
    assert public.startswith("ssh-ed25519 ")
    assert pool_key("pool-1234") == (path, public)  # reused, not regenerated
    remove_pool_key("pool-1234")
    assert not path.exists()
