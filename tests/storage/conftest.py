"""Fixtures for the storage tests: moto's S3 on loopback, and a `Storage` pointed at it.

moto accepts any keys; the ones here are fake and look like secrets, so tests can check that
they never show. `AWS_CA_BUNDLE` and the proxies of this machine are cleared for the session:
they would send boto3 (and rclone, on the nodes) elsewhere than loopback.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "ssh"))

from moto_support import moto_server  # noqa: E402
from storage_support import ACCESS_KEY, SECRET_KEY  # noqa: E402

import skyward as sky  # noqa: E402

CLEARED = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
           "https_proxy")


@pytest.fixture(scope="session")
def s3_url() -> Iterator[str]:
    """moto's server (S3 and the rest) on 127.0.0.1 for the session."""
    with pytest.MonkeyPatch.context() as patch:
        for name in CLEARED:
            patch.delenv(name, raising=False)
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        with moto_server() as url:
            yield url


@pytest.fixture(scope="session")
def store(s3_url: str) -> sky.storage.Storage:
    """A `Storage` on moto's S3, path-style, with fake keys."""
    return sky.storage.Storage(s3_url, ACCESS_KEY, SECRET_KEY, path_style=True, part_size=5 * 1024 * 1024)


@pytest.fixture
def bucket(store: sky.storage.Storage) -> str:
    """A new, empty bucket of its own for the test."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    with store as s3:
        s3._client.create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def ssh_hosts(tmp_path_factory: pytest.TempPathFactory, s3_url: str) -> Iterator[object]:
    """One real OpenSSH server on loopback (tests/ssh/ssh_hosts.py), for the volume tests' pools;
    started after `s3_url`, so its logins get the same proxy settings (none, for loopback)."""
    from ssh_hosts import hosts_running

    with hosts_running(tmp_path_factory.mktemp("sshd"), 1, leak_check=True) as hosts:
        yield hosts
