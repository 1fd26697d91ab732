"""`sky providers`: what is installed, whether credentials are found, how to install the rest."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from cli_support import Sky, no_traceback, write
from moto_support import moto_server


def by_type(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["type"]: row for row in listing["providers"]}


def test_local_and_ssh_are_always_listed_with_credentials_found(sky: Sky) -> None:
    rows = by_type(sky.json("providers"))
    assert rows["local"]["distribution"] == rows["ssh"]["distribution"] == "skyward-core"
    assert rows["local"]["credentials"]["found"] and rows["ssh"]["credentials"]["found"]


def test_each_installed_cloud_names_the_distribution_that_offers_it(sky: Sky) -> None:
    rows = by_type(sky.json("providers"))
    assert {t: rows[t]["distribution"] for t in ("aws", "runpod", "vastai", "verda", "novita")} == {
        "aws": "skyward-aws", "runpod": "skyward-runpod", "vastai": "skyward-vastai",
        "verda": "skyward-verda", "novita": "skyward-novita",
    }


def test_a_runpod_key_in_the_environment_is_found(sky: Sky) -> None:
    credentials = by_type(sky.json("providers", RUNPOD_API_KEY="rp-test-key"))["runpod"]["credentials"]
    assert credentials == {"found": True, "where": "$RUNPOD_API_KEY", "verified": None, "detail": ""}


def test_without_a_runpod_key_it_is_missing_and_the_command_still_succeeds(sky: Sky) -> None:
    credentials = by_type(sky.json("providers"))["runpod"]["credentials"]
    assert credentials["found"] is False and "$RUNPOD_API_KEY" in credentials["where"]


def test_a_vastai_key_file_written_by_its_cli_is_found(sky: Sky) -> None:
    key_file = write(sky.root / "user" / ".config" / "vastai" / "vast_api_key", "vast-test-key\n")
    credentials = by_type(sky.json("providers"))["vastai"]["credentials"]
    assert (credentials["found"], credentials["where"]) == (True, str(key_file))


def test_verda_credentials_are_found_only_with_both_variables(sky: Sky) -> None:
    both = {"VERDA_CLIENT_ID": "verda-id", "VERDA_CLIENT_SECRET": "verda-secret"}
    assert by_type(sky.json("providers", **both))["verda"]["credentials"]["found"] is True
    credentials = by_type(sky.json("providers", VERDA_CLIENT_ID="verda-id"))["verda"]["credentials"]
    assert credentials["found"] is False and "$VERDA_CLIENT_SECRET" in credentials["where"]


def test_a_novita_key_in_the_environment_is_found(sky: Sky) -> None:
    credentials = by_type(sky.json("providers", NOVITA_API_KEY="nv-test-key"))["novita"]["credentials"]
    assert credentials == {"found": True, "where": "$NOVITA_API_KEY", "verified": None, "detail": ""}


def test_a_vultr_key_in_the_environment_is_found_and_vultr_names_its_distribution(sky: Sky) -> None:
    row = by_type(sky.json("providers", VULTR_API_KEY="vultr-test-key"))["vultr"]
    assert row["distribution"] == "skyward-vultr"
    assert row["credentials"] == {"found": True, "where": "$VULTR_API_KEY", "verified": None, "detail": ""}


def test_a_lambda_key_in_the_environment_is_found_and_lambda_names_its_distribution(sky: Sky) -> None:
    row = by_type(sky.json("providers", LAMBDA_API_KEY="secret_lambda-test-key"))["lambdacloud"]
    assert row["distribution"] == "skyward-lambda"
    assert row["credentials"] == {"found": True, "where": "$LAMBDA_API_KEY", "verified": None, "detail": ""}


def test_gcp_credentials_are_adc_from_the_variable_or_gclouds_file(sky: Sky) -> None:
    unset = {"GOOGLE_APPLICATION_CREDENTIALS": "", "CLOUDSDK_CONFIG": ""}
    row = by_type(sky.json("providers", **unset))["gcp"]
    assert row["distribution"] == "skyward-gcp" and row["credentials"]["found"] is False
    assert "GOOGLE_APPLICATION_CREDENTIALS" in row["credentials"]["where"]
    write(sky.root / "user" / ".config" / "gcloud" / "application_default_credentials.json", "{}")
    assert by_type(sky.json("providers", **unset))["gcp"]["credentials"]["found"] is True
    write(sky.root / "key.json", "{}")
    named = {**unset, "GOOGLE_APPLICATION_CREDENTIALS": str(sky.root / "key.json")}
    assert by_type(sky.json("providers", **named))["gcp"]["credentials"]["where"].startswith("$GOOGLE_APP")


def test_aws_credentials_come_from_the_standard_variables(sky: Sky) -> None:
    keys = {"AWS_ACCESS_KEY_ID": "AKIATESTINGSKYWARD01", "AWS_SECRET_ACCESS_KEY": "secret"}
    assert by_type(sky.json("providers", **keys))["aws"]["credentials"]["found"] is True
    assert by_type(sky.json("providers"))["aws"]["credentials"]["found"] is False


def test_aws_credentials_come_from_a_profile_too(sky: Sky) -> None:
    write(sky.root / "aws-credentials", "[work]\naws_access_key_id = AKIAX\naws_secret_access_key = s\n")
    credentials = by_type(sky.json("providers", AWS_PROFILE="work"))["aws"]["credentials"]
    assert credentials["found"] is True


def test_a_known_provider_without_its_package_shows_the_install_command(sky: Sky) -> None:
    done = sky.lacking_a_provider("providers", "--json")
    assert done.returncode == 0, done.stderr
    nimbus = by_type(json.loads(done.stdout))["nimbus"]
    assert (nimbus["installed"], nimbus["install"]) == (False, "pip install skyward-nimbus")
    assert "pip install skyward-nimbus" in sky.lacking_a_provider("providers").stdout


def test_only_providers_that_are_installed_or_published_here_are_listed(sky: Sky) -> None:
    """No row names a package this repository does not publish: every cloud it knows is installed."""
    rows = sky.json("providers")["providers"]
    assert all(row["installed"] for row in rows), [row["name"] for row in rows if not row["installed"]]


def test_a_provider_installed_but_not_loaded_says_why(sky: Sky) -> None:
    aws = by_type(sky.json("providers", SKYWARD_DISABLE_PLUGIN_AUTOLOAD="1"))["aws"]
    assert aws["installed"] is False and "SKYWARD_DISABLE_PLUGIN_AUTOLOAD" in aws["hint"]


def test_plugins_are_listed_with_their_distribution(sky: Sky) -> None:
    plugins = {row["name"]: row for row in sky.json("providers")["plugins"]}
    assert plugins["joblib"]["distribution"] == "skyward-core"
    assert plugins["torch"]["distribution"] == "skyward-torch"


def test_the_original_clis_spelling_lists_the_same(sky: Sky) -> None:
    assert sky.json("providers", "list") == sky.json("providers")


def test_the_table_shows_credential_state_per_provider(sky: Sky) -> None:
    done = sky("providers", RUNPOD_API_KEY="rp-test-key")
    assert done.returncode == 0
    runpod = next(line for line in done.stdout.splitlines() if "RunPod" in line)
    vastai = next(line for line in done.stdout.splitlines() if "VastAI" in line)
    assert "found" in runpod and "missing" in vastai


# -- --check: one authenticated call, against moto's STS -----------------------------------------


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    with moto_server() as url:
        yield url


AWS_KEYS = {"AWS_ACCESS_KEY_ID": "AKIATESTINGSKYWARD01", "AWS_SECRET_ACCESS_KEY": "secret",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1"}


def test_check_verifies_aws_credentials_with_sts(sky: Sky, moto_url: str) -> None:
    credentials = by_type(sky.json("providers", "--check", AWS_ENDPOINT_URL=moto_url, **AWS_KEYS))["aws"][
        "credentials"
    ]
    assert credentials["verified"] is True and credentials["detail"].startswith("arn:aws:")


def test_check_that_cannot_reach_aws_fails_with_exit_code_1(sky: Sky) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = sky("providers", "check", "--json", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", **AWS_KEYS)
    assert done.returncode == 1 and no_traceback(done)
    assert by_type(json.loads(done.stdout))["aws"]["credentials"]["verified"] is False
    assert "credentials refused by: AWS" in done.stderr


def test_a_hyperstack_key_in_the_environment_is_found(sky: Sky) -> None:
    rows = by_type(sky.json("providers", HYPERSTACK_API_KEY="hs-test-key"))
    credentials = rows["hyperstack"]["credentials"]
    assert credentials == {"found": True, "where": "$HYPERSTACK_API_KEY", "verified": None, "detail": ""}


def test_a_massed_compute_key_in_the_environment_is_found(sky: Sky) -> None:
    row = by_type(sky.json("providers", MASSED_API_KEY="massed-test-key"))["massedcompute"]
    assert row["distribution"] == "skyward-massedcompute"
    assert row["credentials"] == {"found": True, "where": "$MASSED_API_KEY", "verified": None, "detail": ""}


def test_a_tensordock_pair_in_the_environment_is_found_and_half_a_pair_is_not(sky: Sky) -> None:
    pair = {"TENSORDOCK_API_KEY": "td-test-key", "TENSORDOCK_API_TOKEN": "td-test-token"}
    row = by_type(sky.json("providers", **pair))["tensordock"]
    assert row["distribution"] == "skyward-tensordock"
    where = "$TENSORDOCK_API_KEY and $TENSORDOCK_API_TOKEN"
    assert row["credentials"] == {"found": True, "where": where, "verified": None, "detail": ""}
    half = by_type(sky.json("providers", TENSORDOCK_API_KEY="td-test-key"))["tensordock"]["credentials"]
    assert (half["found"], half["where"]) == (False, "looked in $TENSORDOCK_API_TOKEN")


def test_a_jarvislabs_key_in_the_environment_is_found(sky: Sky) -> None:
    row = by_type(sky.json("providers", JL_API_KEY="jl-test-key"))["jarvislabs"]
    assert row["distribution"] == "skyward-jarvislabs"
    assert row["credentials"] == {"found": True, "where": "$JL_API_KEY", "verified": None, "detail": ""}


def test_scaleways_three_credentials_in_the_environment_are_found_and_a_lone_secret_is_not(sky: Sky) -> None:
    three = {
        "SCW_SECRET_KEY": "scw-secret",
        "SCW_ACCESS_KEY": "SCWTEST",
        "SCW_DEFAULT_PROJECT_ID": "scw-project",
    }
    row = by_type(sky.json("providers", **three))["scaleway"]
    assert row["distribution"] == "skyward-scaleway"
    assert row["credentials"] == {"found": True, "where": "$SCW_SECRET_KEY", "verified": None, "detail": ""}
    lone = by_type(sky.json("providers", SCW_SECRET_KEY="scw-secret"))["scaleway"]["credentials"]
    assert lone["found"] is False and "$SCW_ACCESS_KEY, $SCW_DEFAULT_PROJECT_ID" in lone["where"]
