"""A pool on Scaleway, end to end against the fake Instance API: servers created, used over SSH,
terminated.

Every server here is a real sshd the fake started from the host key and login key in the server's
cloud-init user data, so these tests cross the same boundary a real server does: the product
listing, the security group, the create request, the user data, the power-on, the pinned host
key, the bootstrap and the workers, and the termination confirmed before the pool ends. One pool
start covers the lot (CI time); the refusals below fail before any server exists.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from cloud_workloads import assert_every_node_answers
from fake_scaleway import FakeScaleway
from scaleway_support import ACCESS_KEY, PROJECT, SECRET_KEY, scaleway, scaleway_pool

import skyward as sky
from skyward.errors import NoOffersError, ProvisionError


def test_a_two_node_pool_falls_over_out_of_stock_runs_tasks_and_terminates_everything_on_exit(
    scaleway_api: FakeScaleway, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scaleway_api.out_of_stock = {"fr-par-2"}
    caplog.set_level(logging.DEBUG, logger="scaleway")  # the SDK's own request log, bodies and all
    log_file = tmp_path / "skyward.log"
    events: list[Any] = []
    logging_config = sky.LogConfig(level="DEBUG", file=str(log_file), console=False)
    provider = scaleway(scaleway_api, zone=("fr-par-2", "nl-ams-1"))
    with scaleway_pool(
        scaleway_api,
        provider=provider,
        nodes=2,
        accelerator="L4",
        logging=logging_config,
        on_event=events.append,
    ) as pool:
        assert_every_node_answers(pool, 2, "scaleway")
        servers = list(scaleway_api.servers.values())
        rules = {g["zone"]: scaleway_api.rules[g["id"]] for g in scaleway_api.groups.values()}
        cloud_init = [yaml.safe_load(scaleway_api.user_data[s["id"]]["cloud-init"]) for s in servers]
    refused = [c for c in scaleway_api.creates if c["zone"] == "fr-par-2"]
    assert refused and {c["commercial_type"] for c in refused} == {"L4-1-24G"}, "the cheapest zone first"
    assert {s["zone"] for s in servers} == {"nl-ams-1"}, "out of stock there: the next offer taken"
    assert sorted(s["name"] for s in servers) == [f"skyward-{pool.name}-{n}".lower() for n in (0, 1)]
    assert all(s["tags"] == ["skyward"] and s["project"] == PROJECT for s in servers)
    assert [
        (r["direction"], r["protocol"], r["ip_range"], r["dest_port_from"]) for r in rules["nl-ams-1"]
    ] == [("inbound", "TCP", "127.0.0.1/32", scaleway_api.ssh_port)]
    assert all(config["ssh_deletekeys"] and config["runcmd"] for config in cloud_init)
    started = [scaleway_api.boot_guardians[s["id"]] for s in servers]
    assert all(said.startswith("started") for said in started), "each boot guardian ran before any login"
    assert sorted(scaleway_api.terminated) == sorted(s["id"] for s in servers)
    text = log_file.read_text()
    assert "skyward.scaleway_server_created" in text and SECRET_KEY not in text
    assert events and not any(SECRET_KEY in repr(event) for event in events)
    sdk_log = [record.getMessage() for record in caplog.records if record.name == "scaleway"]
    assert any("/products/servers" in line for line in sdk_log), "the SDK's request log is on"
    assert not any(SECRET_KEY in line or "PRIVATE KEY" in line for line in sdk_log), "no user data in it"


def test_spot_is_refused_naming_the_fix_before_anything_is_created(scaleway_api: FakeScaleway) -> None:
    with (
        pytest.raises(NoOffersError, match='sells no spot.*allocation="on-demand"'),
        scaleway_pool(scaleway_api, accelerator="H100", allocation="spot"),
    ):
        pass
    assert scaleway_api.creates == [] and scaleway_api.tokens_seen, "the types were read, nothing created"


def test_an_unknown_accelerator_fails_naming_close_cards(scaleway_api: FakeScaleway) -> None:
    with (
        pytest.raises(NoOffersError, match=r"no commercial type with 1x B200 .*close GPUs"),
        scaleway_pool(scaleway_api, accelerator="B200"),
    ):
        pass
    assert scaleway_api.creates == []


def test_a_refused_key_fails_naming_the_variables_and_leaves_nothing(scaleway_api: FakeScaleway) -> None:
    other = "00000000-1111-4222-8333-444444444444"
    provider = scaleway(scaleway_api, secret_key=other)
    with (
        pytest.raises(ProvisionError, match="SCW_SECRET_KEY") as caught,
        scaleway_pool(scaleway_api, provider=provider, accelerator="L4"),
    ):
        pass
    assert other not in str(caught.value)
    assert scaleway_api.creates == []


def test_missing_credentials_fail_naming_the_variables_and_the_cli_file_before_any_request(
    scaleway_api: FakeScaleway,
) -> None:
    compute = sky.Compute(provider=sky.Scaleway(api_url=scaleway_api.url), console=False, logging=False)
    with pytest.raises(sky.ConfigurationError, match=r"SCW_SECRET_KEY.*config\.yaml"), compute:
        pass
    assert scaleway_api.tokens_seen == [], "no request was even sent"


def test_the_credentials_come_from_the_cli_profile_through_the_sdks_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyward_scaleway.account import resolve

    profile = {"access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "default_project_id": PROJECT}
    path = tmp_path / "scw" / "config.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump({"profiles": {"gpu": profile}}))
    monkeypatch.setenv("SCW_PROFILE", "gpu")
    found = resolve(None, None, None)
    assert (found.access_key, found.secret_key, found.project_id) == (ACCESS_KEY, SECRET_KEY, PROJECT)
    assert SECRET_KEY not in repr(found)


def test_a_client_that_cannot_learn_its_address_fails_naming_ssh_cidr_and_opens_nothing(
    scaleway_api: FakeScaleway,
) -> None:
    provider = scaleway(scaleway_api, ip_lookup_url=scaleway_api.url + "/no-such-echo")
    with (
        pytest.raises(ProvisionError, match=r"Scaleway\(ssh_cidr=...\)"),
        scaleway_pool(scaleway_api, provider=provider, accelerator="L4"),
    ):
        pass
    assert scaleway_api.groups == {}
