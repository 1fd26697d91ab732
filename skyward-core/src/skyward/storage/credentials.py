"""Credentials for an object store: a string, or a callable (sync or async) that returns one.

A callable is called when the value is needed (a `Storage` opened, a pool's volumes rendered),
never when the `Storage` is built, so a short-lived token is fetched as late as possible and a
secret manager is asked only by the code that uses the value. Every resolved value that is a secret
is registered with `skyward.secrets`, so it reads `***` in Skyward's console, events and logs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from skyward.errors import ConfigurationError
from skyward.secrets import register_secret

__all__ = ["Credential", "check_credential", "resolve_credential"]

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
