"""The records of parked pools (`skyward.providers.linger`): what is written, who may claim one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import skyward as sky
from skyward.providers import linger
from skyward.providers.base import Cluster, Instance

SECRET = "rpa_LINGERSECRET0123456789"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKYWARD_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def spec(**kwargs: object) -> sky.Spec:
    return sky.Spec(provider=sky.Local(), **kwargs)


def parked(pool: str, seconds: float, the_spec: sky.Spec | None = None) -> linger.Parked:
    the_spec = the_spec or spec()
    cluster = Cluster(id=pool, provider="cloud", spec=the_spec, state={"api_key_hint": "none"})
    instance = Instance(id=f"{pool}-m0", node=0, host_key="ssh-ed25519 AAAA host")
    digest = linger.compatibility("cloud", the_spec)
    return linger.Parked(pool, "cloud", digest, time.time() + seconds, cluster, (instance,))


def test_node_count_and_ttl_do_not_change_compatibility_but_the_image_does() -> None:
    base = linger.compatibility("cloud", spec(nodes=1, ttl=600))
    assert linger.compatibility("cloud", spec(nodes=3, ttl=60)) == base
    assert linger.compatibility("cloud", spec(image=sky.Image(pip=["numpy"]))) != base
    assert linger.compatibility("other", spec()) != base


def test_a_record_is_written_0600_without_the_spec() -> None:
    secret_spec = spec(image=sky.Image(env={"TOKEN": SECRET}))
    path = linger.park(parked("pool-a", 60, secret_spec))
    assert path.stat().st_mode & 0o777 == 0o600
    assert SECRET.encode() not in path.read_bytes()
    (record,) = linger.parked()
    assert record.cluster.spec is None and record.instances[0].host_key == "ssh-ed25519 AAAA host"


def test_a_claim_takes_the_record_away_from_every_later_claim() -> None:
    record = parked("pool-a", 60)
    linger.park(record)
    claimed = linger.claim("cloud", record.compatibility)
    assert claimed is not None and claimed.pool == "pool-a"
    assert linger.claim("cloud", record.compatibility) is None
    assert linger.parked() == []


def test_a_record_of_another_spec_or_too_close_to_its_end_is_not_claimed() -> None:
    linger.park(parked("pool-a", 60))
    linger.park(parked("pool-b", linger.CLAIM_MARGIN - 1))
    assert linger.claim("cloud", linger.compatibility("cloud", spec(image=sky.Image(pip=["x"])))) is None
    claimed = linger.claim("cloud", linger.compatibility("cloud", spec()))
    assert claimed is not None and claimed.pool == "pool-a"
    assert linger.claim("cloud", linger.compatibility("cloud", spec())) is None


def test_an_expired_record_is_pruned_with_its_login_key(_home: Path) -> None:
    from skyward.transport.ssh_connect import pool_key

    key_file, _ = pool_key("pool-old")
    path = linger.park(parked("pool-old", 60))
    os.utime(path)
    assert linger.parked(now=time.time() + 120) == []
    assert not path.exists() and not key_file.exists()


def test_forget_leaves_a_pool_that_is_not_parked_its_key() -> None:
    from skyward.transport.ssh_connect import pool_key

    key_file, _ = pool_key("pool-live")
    linger.forget(["pool-live"])
    assert key_file.exists()
