"""Fixtures for the GCP tests: a fake Compute Engine API on loopback whose VMs are real sshd's.

See fake_gcp.py. The provider is pointed at it with `GCP(api_endpoint=...)` and finds its
credentials as it would anywhere, through Application Default Credentials: a service account key
file made for the test, named by `GOOGLE_APPLICATION_CREDENTIALS` (its token URI on a loopback
port nothing listens on: the client signs its own tokens). `NO_GCE_CHECK` keeps google-auth from
looking for a real metadata server, and `CLOUDSDK_CONFIG` from reading this user's gcloud files:
nothing here talks to any address but loopback. Each test gets its own `SKYWARD_HOME`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))
sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_gcp import FakeGCP  # noqa: E402
from gcp_world import service_account_key, write_key  # noqa: E402

#: Where the client would trade its key for a token, if it did: a closed loopback port.
TOKEN_URI = "http://127.0.0.1:9/token"


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "skyward-home"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    for name in (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "GCP_API_ENDPOINT",
        "GCE_METADATA_HOST",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def gcp_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGCP]:
    """The fake API, with the test's key file as the ADC; every VM or firewall rule it still has
    when the test ends is a leak, and fails the test."""
    info, public = service_account_key(TOKEN_URI)
    key_file = tmp_path / "service-account.json"
    write_key(key_file, info)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    with serving(FakeGCP(tmp_path / "vms", info["client_email"], public)) as fake:
        yield fake
