"""Credentials for an object store: a string, or a callable (sync or async) that returns one.

A callable is called when the value is needed (a `Storage` opened, a pool's volumes rendered),
never when the `Storage` is built, so a short-lived token is fetched as late as possible and a
secret manager is asked only by the code that uses the value. Every resolved value that is a secret
is registered with `skyward.secrets`, so it reads `***` in Skyward's console, events and logs.

`EphemeralKeys` is the other kind: a key pair a store's API makes for us on first use and deletes
when we are done (Hyperstack's), so the long-lived API key never leaves this machine and what the
store, or a node, is given stops working when the storage closes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeAlias

import attrs

from skyward.errors import ConfigurationError
from skyward.secrets import register_secret

__all__ = ["Credential", "EphemeralKeys", "MintedKey", "check_credential", "resolve_credential"]

#: A credential as the user gives it: the value, or something that returns it (awaitable or not).
Credential: TypeAlias = "str | Callable[[], str] | Callable[[], Awaitable[str]]"


def check_credential(owner: str, name: str, value: object) -> None:
    """Refuse, at construction, a credential that is neither a string, a callable nor None."""
    if value is None or isinstance(value, str) or callable(value):
        return
    raise ConfigurationError(
        f"{owner}({name}=<{type(value).__name__}>): a credential is a string or a function returning "
        f'one (sync or async); pass e.g. {name}=os.environ["MY_{name.upper()}"]'
    )


def _run_coroutine(awaitable: Awaitable[str]) -> str:
    """Await `awaitable` from synchronous code, also when this thread already runs an event loop
    (a pool's loop rendering its volumes): then it runs on a loop of its own in a helper thread."""

    async def wait() -> str:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="skyward-credential") as pool:
        return pool.submit(asyncio.run, wait()).result()


def resolve_credential(owner: str, name: str, value: object, *, secret: bool = True) -> str | None:
    """The value of credential `name` of `owner`: `value` itself, or what the callable returns.

    Raises `ConfigurationError` naming the credential when the callable fails or returns anything
    but a non-empty string. `secret` values are registered for masking.
    """
    if value is None:
        return None
    if callable(value):
        try:
            result: object = value()
            if inspect.isawaitable(result):
                result = _run_coroutine(result)
        except Exception as exc:
            raise ConfigurationError(
                f"{owner}: the function given as {name}= failed ({type(exc).__name__}: {exc}); "
                "fix it or pass the value as a string"
            ) from exc
    else:
        result = value
    if not isinstance(result, str) or not result:
        raise ConfigurationError(
            f"{owner}: {name}= gave {'an empty string' if result == '' else type(result).__name__}"
            ", not a credential string; return the key as a non-empty str"
        )
    if secret:
        register_secret(result)
    return result


@attrs.frozen
class MintedKey:
    """A key pair a store's API made for us, and the `id` that API deletes it by."""

    id: str
    access_key: str = attrs.field(repr=False)
    secret_key: str = attrs.field(repr=False)


class EphemeralKeys:
    """A key pair minted on first use and deleted when nothing holds it any more.

    Each `acquire()` is a hold: an opened client's (given back when the client closes) or a
    caller's of `Storage.keys()` (a pool's volumes: kept until the storage closes). `release(hold)`
    gives one back, and the key is deleted with the last; `close()` deletes it now, whatever holds
    it. Holds are tokens, not a count, so a hold taken before a `close()` cannot release the key
    minted after it. A deleted key is forgotten first, so it is never handed out again: the next
    `acquire()` mints a new one. Each instance is one key at a time, so two storages (two
    instances) never delete each other's key. A subclass says how to `mint` and `delete`.

    The minted access key and secret are registered as secrets before anything else sees them. A
    pickled copy carries the settings, not the key or its holds (it mints its own).
    """

    #: Attributes that are this process's state, left out of a pickled copy.
    RUNTIME: ClassVar[tuple[str, ...]] = ("_lock", "_key", "_holds", "_last_hold")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._key: MintedKey | None = None
        self._holds: set[int] = set()
        self._last_hold = 0

    def mint(self) -> MintedKey:
        """Make a new key pair (the subclass's API call)."""
        raise NotImplementedError

    def delete(self, key: MintedKey) -> None:
        """Delete `key` (the subclass's API call); a key already gone is not an error."""
        raise NotImplementedError

    @property
    def current(self) -> MintedKey | None:
        """The key held now, or None (none minted yet, or deleted since)."""
        return self._key

    def acquire(self) -> tuple[MintedKey, int]:
        """The key (minted now if none is held) and a hold on it, for `release`."""
        with self._lock:
            if self._key is None:
                key = self.mint()
                register_secret(key.access_key)
                register_secret(key.secret_key)
                self._key = key
            self._last_hold += 1
            self._holds.add(self._last_hold)
            return self._key, self._last_hold

    def release(self, hold: int) -> None:
        """Give back `hold`; the key is deleted when it was the last (a stale hold does nothing)."""
        with self._lock:
            if hold not in self._holds:
                return
            self._holds.discard(hold)
            if not self._holds:
                self._drop()

    def close(self) -> None:
        """Delete the key now, whatever still holds it (nothing to do when none is minted)."""
        with self._lock:
            self._holds.clear()
            self._drop()

    def _drop(self) -> None:
        key, self._key = self._key, None  # forgotten before the call: never reused, even if it fails
        if key is not None:
            self.delete(key)

    def __getstate__(self) -> dict[str, Any]:
        return {name: value for name, value in self.__dict__.items() if name not in self.RUNTIME}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()
