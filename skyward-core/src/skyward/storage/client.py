"""`Storage`, one S3-compatible object store, and `StorageClient`, what `with storage as s3:` gives.

`Storage` is a frozen value: where the store is and how to sign in, nothing opened. It is what a
`sky.Volume(storage=...)` names and what the presets (`sky.storage.S3(...)`, `R2(...)`) return.
Opening it resolves the credentials (strings, or functions called now, awaited if async) and
builds one boto3 client. boto3 does the transfers: files of `part_size` or more go up in parts,
several at once, and are retried part by part. Every failure is a `StorageError` that names the
object (`s3://bucket/key`) and the endpoint; a missing object is a `StorageNotFoundError`, which
is also a `FileNotFoundError`.

A store whose keys are minted for it (`ephemeral_keys`, Hyperstack's) mints them when first
opened and deletes them when the storage closes: when the last client opened from it is closed
(the `with storage as s3:` block's exit), or at `storage.close()`.

boto3 is imported when a `Storage` is opened, not when this module is: skyward-core does not
depend on it (the nodes never need it), skyward-aws does. Without it, opening says what to install.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs
import structlog

from skyward.errors import ConfigurationError, MissingPackageError, SkywardError
from skyward.storage.credentials import EphemeralKeys, check_credential, resolve_credential

__all__ = ["DEFAULT_PART_SIZE", "MIN_PART_SIZE", "Storage", "StorageClient", "StorageError",
           "StorageNotFoundError"]

#: Files of this size or more are uploaded in parts of this size (and downloaded in ranges).
DEFAULT_PART_SIZE = 64 * 1024 * 1024
#: S3's smallest part (except the last): a smaller part_size would be refused by the store.
MIN_PART_SIZE = 5 * 1024 * 1024
#: A transfer logs its progress at most this often (seconds).
PROGRESS_INTERVAL = 5.0
#: Error codes S3-compatible stores answer for a missing bucket or object.
_MISSING = {"404", "NoSuchKey", "NoSuchBucket", "NotFound"}

Progress = Callable[[int, int], None]


class StorageError(SkywardError):
    """An object-store call failed; the message names the object, the endpoint and the cause."""


class StorageNotFoundError(StorageError, FileNotFoundError):
    """The bucket or the object does not exist."""


def _check_endpoint(instance: Storage, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"Storage(endpoint={value!r}): expected the store's URL, e.g. "
            'endpoint="https://s3.us-east-1.amazonaws.com"'
        )


def _check_part_size(instance: Storage, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_PART_SIZE:
        raise ConfigurationError(
            f"Storage(part_size={value!r}): parts are at least {MIN_PART_SIZE} bytes (5 MiB), the "
            "smallest S3 accepts; pass e.g. part_size=64 * 1024 * 1024"
        )


def _credential(instance: Storage, attribute: attrs.Attribute[Any], value: object) -> None:
    check_credential("Storage", attribute.name, value)


def _check_ephemeral(instance: Storage, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, EphemeralKeys):
        raise ConfigurationError(
            f"Storage(ephemeral_keys={value!r}): expected a skyward.storage.credentials.EphemeralKeys "
            "(or None, with access_key= and secret_key=)"
        )


class _Entered:
    """The clients `with storage as s3:` handed out and not yet closed, per thread, innermost last:
    each block's exit closes the client its own entry opened, even with blocks in several threads.
    A pickled or copied `Storage` starts with none (clients do not travel)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_thread: dict[int, list[StorageClient]] = {}

    def push(self, client: StorageClient) -> None:
        with self._lock:
            self._by_thread.setdefault(threading.get_ident(), []).append(client)

    def pop(self) -> StorageClient | None:
        with self._lock:
            stack = self._by_thread.get(threading.get_ident())
            if not stack:
                return None
            client = stack.pop()
            if not stack:
                del self._by_thread[threading.get_ident()]
            return client

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]


@attrs.frozen
class Storage:
    """An S3-compatible object store: its `endpoint` and the keys to sign requests with.

    `access_key`, `secret_key` (and `session_token`, for temporary AWS keys) are strings or
    functions returning one, sync or async, called when the store is opened; None for both keys
    uses boto3's own search (environment, `~/.aws`, an instance role). `path_style` puts the
    bucket in the path (`https://host/bucket/key`), which self-hosted stores need. `region` is the
    signing region. `flavor` tells the mount tool which store it talks to ("AWS", "Cloudflare",
    "GCS", "Wasabi", "Other"). `ephemeral_keys`, instead of the two keys, mints a key pair when the
    store is first used and deletes it when the storage closes (see `close`). Use it as a context
    manager: `with storage as s3: s3.ls("bucket")`; the block's exit closes the client.
    """

    endpoint: str = attrs.field(validator=_check_endpoint)
    access_key: Any = attrs.field(default=None, validator=_credential)
    secret_key: Any = attrs.field(default=None, validator=_credential, repr=False)
    path_style: bool = False
    region: str | None = attrs.field(default=None, kw_only=True)
    session_token: Any = attrs.field(default=None, kw_only=True, validator=_credential, repr=False)
    part_size: int = attrs.field(default=DEFAULT_PART_SIZE, kw_only=True, validator=_check_part_size)
    flavor: str = attrs.field(default="Other", kw_only=True)
    #: Runtime state (a lease on minted keys), not part of the store's value: out of eq and hash.
    ephemeral_keys: EphemeralKeys | None = attrs.field(
        default=None, kw_only=True, eq=False, repr=False, validator=_check_ephemeral
    )
    _entered: _Entered = attrs.field(factory=_Entered, init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.ephemeral_keys is not None and (self.access_key is not None or self.secret_key is not None):
            raise ConfigurationError(
                f"Storage(endpoint={self.endpoint!r}): give access_key= and secret_key=, or ephemeral_keys=, "
                "not both (ephemeral keys are minted for the store)"
            )
        if (self.access_key is None) != (self.secret_key is None):
            raise ConfigurationError(
                f"Storage(endpoint={self.endpoint!r}): give both access_key= and secret_key=, or neither "
                "(then boto3 finds the keys in the environment or ~/.aws)"
            )

    @property
    def signing_region(self) -> str:
        """The region requests are signed for ("us-east-1" when none is given, as S3 expects)."""
        return self.region or "us-east-1"

    def keys(self) -> tuple[str | None, str | None, str | None]:
        """(access key, secret key, session token), the functions called now (secrets registered).

        With `ephemeral_keys`, the minted pair (minted now if none is held), held until `close()`:
        whoever asks for the bare keys (a pool's volumes) keeps using them after this returns.
        """
        if self.ephemeral_keys is not None:
            key, _hold = self.ephemeral_keys.acquire()
            return key.access_key, key.secret_key, None
        owner = f"Storage(endpoint={self.endpoint!r})"
        return (
            resolve_credential(owner, "access_key", self.access_key, secret=False),
            resolve_credential(owner, "secret_key", self.secret_key),
            resolve_credential(owner, "session_token", self.session_token),
        )

    def open(self) -> StorageClient:
        """A client for this store (its credentials resolved now); close it, or use `with`."""
        try:
            import boto3  # noqa: F401 - what the error below names
            from botocore.config import Config
        except ImportError:
            raise MissingPackageError(
                "sky.storage needs boto3: pip install 'skyward-core[storage]' (or boto3; skyward-aws "
                "installs it too)"
            ) from None
        access, secret, token, release = self._client_keys()
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": "path" if self.path_style else "auto"},
            retries={"max_attempts": 5, "mode": "standard"},
        )
        try:
            from skyward.storage.boto import boto3_session

            client = boto3_session().client(
                "s3", endpoint_url=self.endpoint, region_name=self.signing_region, aws_access_key_id=access,
                aws_secret_access_key=secret, aws_session_token=token, config=config,
            )
        except Exception:
            if release is not None:
                release()
            raise
        return StorageClient(self, client, release=release)

    def _client_keys(self) -> tuple[str | None, str | None, str | None, Callable[[], None] | None]:
        """The keys for one client, and what gives its hold on minted keys back (None without)."""
        if self.ephemeral_keys is None:
            return (*self.keys(), None)
        key, hold = self.ephemeral_keys.acquire()
        return key.access_key, key.secret_key, None, functools.partial(self.ephemeral_keys.release, hold)

    def close(self) -> None:
        """Delete the keys minted for this store, now, whatever still uses them; the next use mints
        new ones. Nothing to do for a store with keys of its own (its clients close themselves)."""
        if self.ephemeral_keys is not None:
            self.ephemeral_keys.close()

    def __enter__(self) -> StorageClient:
        client = self.open()
        self._entered.push(client)
        return client

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the client this block's `__enter__` opened (minted keys are deleted with the last).

        A failure to close while the block raises is logged, not raised: the block's error is the
        one the caller needs to see."""
        client = self._entered.pop()
        if client is None:
            return
        try:
            client.close()
        except Exception as failure:
            if exc is None:
                raise
            structlog.get_logger().warning(
                "skyward.storage_close_failed", endpoint=self.endpoint,
                error=f"{type(failure).__name__}: {failure}",
            )


class _Transfer:
    """A transfer's progress: the caller's callback on every step, a log line every few seconds."""

    def __init__(self, what: str, total: int, callback: Progress | None) -> None:
        self.what, self.total, self.callback = what, total, callback
        self.done = 0
        self._lock = threading.Lock()
        self._next_log = time.monotonic() + PROGRESS_INTERVAL

    def __call__(self, amount: int) -> None:  # boto3 calls it from its worker threads
        with self._lock:
            self.done += amount
            done = self.done
            now = time.monotonic()
            log = now >= self._next_log
            if log:
                self._next_log = now + PROGRESS_INTERVAL
        if log:
            percent = 100.0 * done / self.total if self.total else 100.0
            structlog.get_logger().info(
                "skyward.storage_progress", what=self.what, bytes=done, total=self.total,
                percent=round(percent, 1),
            )
        if self.callback is not None:
            self.callback(done, self.total)


class StorageClient:
    """An open `Storage`: upload, download, ls, exists, rm. Each method blocks until it is done."""

    def __init__(self, storage: Storage, client: Any, *, release: Callable[[], None] | None = None) -> None:
        self.storage = storage
        self._client = client
        self._release = release

    def __enter__(self) -> StorageClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections, and give back its hold on the store's minted keys (the
        last hold deletes them). Closing twice does nothing more."""
        release, self._release = self._release, None
        try:
            close = getattr(self._client, "close", None)
            if close is not None:
                close()
        finally:
            if release is not None:
                release()

    def _transfer_config(self) -> Any:
        from boto3.s3.transfer import TransferConfig

        size = self.storage.part_size
        return TransferConfig(multipart_threshold=size, multipart_chunksize=size, max_concurrency=8)

    def _where(self, bucket: str, key: str = "") -> str:
        return f"s3://{bucket}/{key} at {self.storage.endpoint}"

    def _failed(self, action: str, bucket: str, key: str, exc: Exception) -> StorageError:
        from botocore.exceptions import BotoCoreError, ClientError

        where = self._where(bucket, key)
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "")
            message = error.get("Message") or status
            if code in _MISSING:
                what = "the bucket" if code == "NoSuchBucket" else "no such object (or bucket)"
                return StorageNotFoundError(f"{action} {where}: {what} ({code}); check the bucket and key")
            return StorageError(f"{action} {where} failed: {code} {message}".rstrip())
        if isinstance(exc, BotoCoreError | OSError):
            return StorageError(f"{action} {where} failed: {exc}")
        return StorageError(f"{action} {where} failed: {type(exc).__name__}: {exc}")

    def upload(
        self, bucket: str, local_path: str | os.PathLike[str], *, key: str | None = None,
        progress: Progress | None = None,
    ) -> str:
        """Upload the file `local_path` to `bucket` as `key` (its file name when None); the key.

        A file of `part_size` or more goes up in parts, several at once. `progress(done, total)`
        is called as bytes go (from boto3's threads).
        """
        path = Path(local_path).expanduser()
        key = key if key is not None else path.name
        if not path.is_file():
            raise StorageError(f"upload of {path} to {self._where(bucket, key)}: {path} is not a file")
        transfer = _Transfer(f"upload {path} -> s3://{bucket}/{key}", path.stat().st_size, progress)
        try:
            config = self._transfer_config()
            self._client.upload_file(str(path), bucket, key, Config=config, Callback=transfer)
        except Exception as exc:  # noqa: BLE001 - boto3 raises several families; each named below
            raise self._failed("upload to", bucket, key, getattr(exc, "last_exception", None) or exc) from exc
        return key

    def download(
        self, bucket: str, key: str, local_path: str | os.PathLike[str], *, progress: Progress | None = None,
    ) -> Path:
        """Download `key` of `bucket` to `local_path` (into it, under the key's name, if it is a
        folder); parent folders are made. Returns the file's path."""
        path = Path(local_path).expanduser()
        if path.is_dir():
            path = path / key.rsplit("/", 1)[-1]
        try:
            head = self._client.head_object(Bucket=bucket, Key=key)
        except Exception as exc:  # noqa: BLE001
            raise self._failed("download of", bucket, key, exc) from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        size = int(head.get("ContentLength", 0))
        transfer = _Transfer(f"download s3://{bucket}/{key} -> {path}", size, progress)
        try:
            config = self._transfer_config()
            self._client.download_file(bucket, key, str(path), Config=config, Callback=transfer)
        except Exception as exc:  # noqa: BLE001
            raise self._failed("download of", bucket, key, exc) from exc
        return path

    def ls(self, bucket: str, prefix: str = "") -> list[str]:
        """Every key of `bucket` that starts with `prefix`, in the store's (lexical) order."""
        keys: list[str] = []
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
                keys.extend(item["Key"] for item in page.get("Contents", ()))
        except Exception as exc:  # noqa: BLE001
            raise self._failed("listing", bucket, prefix, exc) from exc
        return keys

    def exists(self, bucket: str, key: str) -> bool:
        """Whether `key` is an object of `bucket` (a missing bucket is an error, not False)."""
        from botocore.exceptions import ClientError

        try:
            self._client.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("404", "NoSuchKey", "NotFound") and self._bucket_exists(bucket):
                return False
            raise self._failed("looking up", bucket, key, exc) from exc
        except Exception as exc:  # noqa: BLE001
            raise self._failed("looking up", bucket, key, exc) from exc
        return True

    def _bucket_exists(self, bucket: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._client.head_bucket(Bucket=bucket)
        except ClientError:
            return False
        return True

    def rm(self, bucket: str, key: str) -> None:
        """Delete `key` from `bucket` (deleting a key that is not there is not an error, as in S3)."""
        try:
            self._client.delete_object(Bucket=bucket, Key=key)
        except Exception as exc:  # noqa: BLE001
            raise self._failed("removing", bucket, key, exc) from exc
