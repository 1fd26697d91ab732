"""`sky.storage.Hyperstack`: its default endpoint, and an ephemeral access key minted on first use
through Hyperstack's key API (a fake on loopback, fake_hyperstack.py) and deleted at close.

The S3 side is moto's server (`endpoint=` overrides the region's); the keys come from the fake.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

sys.path.insert(0, str(Path(__file__).parent))

from cloud_fakes import serving  # noqa: E402
from fake_hyperstack import ACCESS_KEYS, Call, FakeHyperstack  # noqa: E402

import skyward as sky  # noqa: E402
from skyward.secrets import registered_secrets  # noqa: E402

API_KEY = "hyperstack-test-api-key-0123456789"


@pytest.fixture
def hyperstack_api(tmp_path: Path, s3_url: str) -> Iterator[FakeHyperstack]:
    """The fake key API (after moto, so proxies are off); a key left on it fails the test."""
    with serving(FakeHyperstack(tmp_path, api_key=API_KEY)) as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_api_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERSTACK_API_KEY", raising=False)


def hyperstack(api: FakeHyperstack, s3_url: str, **options: object) -> sky.storage.Storage:
    """A Hyperstack store whose keys come from the fake and whose S3 is moto."""
    options = {"api_key": API_KEY, **options}
    return sky.storage.Hyperstack(  # type: ignore[arg-type]
        region="CANADA-1", endpoint=s3_url, api_url=api.url, **options
    )


def test_built_with_only_api_key_and_region_it_calls_nothing(hyperstack_api: FakeHyperstack) -> None:
    store = sky.storage.Hyperstack(api_key=API_KEY, region="CANADA-1", api_url=hyperstack_api.url)
    assert isinstance(store, sky.storage.Storage)
    assert hyperstack_api.calls == []


def test_built_without_an_api_key_it_needs_no_variable() -> None:
    store = sky.storage.Hyperstack(region="CANADA-1")
    assert store.ephemeral_keys is not None and store.ephemeral_keys.current is None


def test_canada_1_is_served_at_its_documented_endpoint() -> None:
    store = sky.storage.Hyperstack(api_key=API_KEY, region="CANADA-1")
    assert (store.endpoint, store.signing_region, store.path_style) == (
        "https://ca1.obj.nexgencloud.io", "CANADA-1", True,
    )


def test_endpoint_overrides_the_regions() -> None:
    store = sky.storage.Hyperstack(api_key=API_KEY, region="CANADA-1", endpoint="https://s3.example.test")
    assert store.endpoint == "https://s3.example.test"


def test_an_unknown_region_without_endpoint_names_the_known_ones_and_endpoint() -> None:
    with pytest.raises(sky.ConfigurationError, match=r"NORWAY-1.*known: CANADA-1.*pass endpoint="):
        sky.storage.Hyperstack(api_key=API_KEY, region="NORWAY-1")


def test_the_key_is_minted_on_first_use_with_the_api_key(
    hyperstack_api: FakeHyperstack, s3_url: str, bucket: str
) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    with store as s3:
        assert s3.ls(bucket) == []
        assert hyperstack_api.calls == [Call("POST", ACCESS_KEYS, API_KEY)]
        (live,) = hyperstack_api.keys.values()
        assert store.ephemeral_keys is not None and store.ephemeral_keys.current is not None
        assert store.ephemeral_keys.current.access_key == live["access_key"]
        assert store.ephemeral_keys.current.id == str(live["id"])


def test_closing_deletes_exactly_that_key(hyperstack_api: FakeHyperstack, s3_url: str, bucket: str) -> None:
    other = hyperstack(hyperstack_api, s3_url)
    other.keys()  # someone else's key, on the same account
    (others,) = hyperstack_api.keys
    store = hyperstack(hyperstack_api, s3_url)
    with store as s3:
        s3.ls(bucket)
        assert store.ephemeral_keys is not None and store.ephemeral_keys.current is not None
        mine = int(store.ephemeral_keys.current.id)
    assert hyperstack_api.deleted == [mine]
    assert hyperstack_api.calls[-1] == Call("DELETE", f"{ACCESS_KEYS}/{mine}", API_KEY)
    assert [key["id"] for key in hyperstack_api.live()] == [others]
    other.close()


def test_close_deletes_the_key_handed_out_by_keys(hyperstack_api: FakeHyperstack, s3_url: str) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    access, secret, token = store.keys()
    assert (access, token) == (next(iter(hyperstack_api.keys.values()))["access_key"], None)
    store.close()
    assert hyperstack_api.keys == {}
    assert len(hyperstack_api.deleted) == 1


def test_two_storages_each_delete_only_their_own_key(
    hyperstack_api: FakeHyperstack, s3_url: str, bucket: str
) -> None:
    first, second = hyperstack(hyperstack_api, s3_url), hyperstack(hyperstack_api, s3_url)
    with first as a, second as b:
        a.ls(bucket)
        b.ls(bucket)
        assert first.ephemeral_keys and second.ephemeral_keys
        ids = [int(store.ephemeral_keys.current.id) for store in (first, second)]  # type: ignore[union-attr]
        assert len(set(ids)) == 2
    assert hyperstack_api.deleted == [ids[1], ids[0]]  # the inner block exits first


def test_closing_one_storage_leaves_the_others_key_working(
    hyperstack_api: FakeHyperstack, s3_url: str, bucket: str
) -> None:
    first, second = hyperstack(hyperstack_api, s3_url), hyperstack(hyperstack_api, s3_url)
    b = second.open()
    with first as a:
        a.ls(bucket)
    assert second.ephemeral_keys is not None and second.ephemeral_keys.current is not None
    assert list(hyperstack_api.keys) == [int(second.ephemeral_keys.current.id)]
    assert b.ls(bucket) == []
    b.close()
    assert hyperstack_api.keys == {}


def test_a_closed_storage_mints_a_new_key_next_time(
    hyperstack_api: FakeHyperstack, s3_url: str, bucket: str
) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    used = []
    for _ in range(2):
        with store as s3:
            s3.ls(bucket)
            assert store.ephemeral_keys is not None and store.ephemeral_keys.current is not None
            used.append(store.ephemeral_keys.current)
    assert used[0].id != used[1].id and used[0].access_key != used[1].access_key
    assert hyperstack_api.deleted == [int(used[0].id), int(used[1].id)]


def test_nested_blocks_share_one_key_until_the_outer_exits(
    hyperstack_api: FakeHyperstack, s3_url: str, bucket: str
) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    with store as outer:
        with store as inner:
            inner.ls(bucket)
        assert len(hyperstack_api.keys) == 1 and hyperstack_api.deleted == []
        assert outer.ls(bucket) == []
    assert hyperstack_api.keys == {} and len(hyperstack_api.deleted) == 1


def test_without_api_key_the_variable_is_read_at_first_use(
    hyperstack_api: FakeHyperstack, s3_url: str, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = hyperstack(hyperstack_api, s3_url, api_key=None)
    monkeypatch.setenv("HYPERSTACK_API_KEY", API_KEY)
    with store as s3:
        s3.ls(bucket)
    assert [call.api_key for call in hyperstack_api.calls] == [API_KEY, API_KEY]


def test_a_missing_api_key_variable_fails_at_first_use_naming_it(
    hyperstack_api: FakeHyperstack, s3_url: str
) -> None:
    store = hyperstack(hyperstack_api, s3_url, api_key=None)
    with pytest.raises(sky.ConfigurationError, match=r"set HYPERSTACK_API_KEY or pass api_key="):
        store.open()
    assert hyperstack_api.calls == []


def test_a_refused_api_key_names_the_fix(hyperstack_api: FakeHyperstack, s3_url: str) -> None:
    store = hyperstack(hyperstack_api, s3_url, api_key="not-the-right-api-key")
    refused = r"refused the API key \(401.*check api_key= or HYPERSTACK_API_KEY"
    with pytest.raises(sky.ConfigurationError, match=refused):
        store.open()


def test_an_api_key_function_is_called_at_first_use(hyperstack_api: FakeHyperstack, s3_url: str) -> None:
    asked: list[int] = []
    store = hyperstack(hyperstack_api, s3_url, api_key=lambda: asked.append(1) or API_KEY)
    assert asked == []
    store.keys()
    store.close()
    assert asked == [1]
    assert [call.api_key for call in hyperstack_api.calls] == [API_KEY, API_KEY]


def test_a_key_deleted_elsewhere_closes_quietly(hyperstack_api: FakeHyperstack, s3_url: str) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    store.keys()
    hyperstack_api.keys.clear()  # deleted in the console meanwhile
    store.close()
    assert hyperstack_api.calls[-1].method == "DELETE"


def test_a_failed_delete_names_the_key_left_and_where_to_delete_it(
    hyperstack_api: FakeHyperstack, s3_url: str
) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    store.keys()
    (left,) = hyperstack_api.keys
    hyperstack_api.delete_errors = 1
    with pytest.raises(sky.storage.StorageError, match=rf"access key id {left}: .*500.*Hyperstack console"):
        store.close()
    hyperstack_api.keys.clear()  # deleted by hand, as the error says


def test_a_failed_delete_does_not_hide_the_blocks_own_error(
    hyperstack_api: FakeHyperstack, s3_url: str
) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    hyperstack_api.delete_errors = 1
    with pytest.raises(KeyError, match="the block's"), store:
        raise KeyError("the block's")
    assert store.ephemeral_keys is not None and store.ephemeral_keys.current is None
    hyperstack_api.keys.clear()


def test_given_keys_mint_nothing(hyperstack_api: FakeHyperstack, s3_url: str, bucket: str) -> None:
    store = hyperstack(hyperstack_api, s3_url, access_key="AKIAGIVEN0001", secret_key="given-secret-0001")
    with store as s3:
        s3.ls(bucket)
    assert store.ephemeral_keys is None and hyperstack_api.calls == []


def test_the_minted_key_and_secret_are_masked_and_never_logged(
    hyperstack_api: FakeHyperstack, s3_url: str, bucket: str
) -> None:
    store = hyperstack(hyperstack_api, s3_url)
    with capture_logs() as logged, store as s3:
        s3.ls(bucket)
        key = store.ephemeral_keys.current  # type: ignore[union-attr]
    assert key is not None
    assert {key.access_key, key.secret_key, API_KEY} <= set(registered_secrets())
    events = [event["event"] for event in logged]
    assert events == ["skyward.storage_key_minted", "skyward.storage_key_deleted"]
    for value in (key.access_key, key.secret_key, API_KEY):
        assert value not in repr(logged)
        assert value not in repr(store)


def test_minting_without_skyward_hyperstack_names_the_package_and_given_keys(
    hyperstack_api: FakeHyperstack, s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "skyward_hyperstack.storage_keys", None)  # as if not installed
    store = hyperstack(hyperstack_api, s3_url)
    with pytest.raises(sky.MissingPackageError, match=r"pip install skyward-hyperstack.*access_key="):
        store.open()
    assert hyperstack_api.calls == []
