"""A provider's API called from outside a pool: `sky ls`, `sky offers`, a price, a credential check.

These callers are synchronous, and some run inside an event loop (a pool choosing between specs
asks for prices from its own loop, where `asyncio.run` cannot start another). So a client is
opened, used and closed on a loop of its own (`run_closing`), on a short-lived thread when the
caller may already be in a loop (`on_own_thread`). A price no one can read is None, never an
error (`known_or_none`): the pool then tries that spec last and its launch reports the real cause;
`first_price` is that for the usual estimate, the price of the first offer a pool would take.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from skyward.market.rental import Rental


class Closable(Protocol):
    """A client holding a session that must be closed on the loop that opened it."""

    async def close(self) -> None: ...


C = TypeVar("C", bound=Closable)
T = TypeVar("T")


def run_closing(open_api: Callable[[], C], work: Callable[[C], Awaitable[T]]) -> T:
    """`work(api)` on a new event loop, `api = open_api()` made inside it and closed after it,
    whatever happened: an HTTP session belongs to the loop that made it, and a closed one leaves
    no warning behind. Raises what `open_api` or `work` raised."""

    async def run() -> T:
        api = open_api()
        try:
            return await work(api)
        finally:
            await api.close()

    return asyncio.run(run())


def on_own_thread(call: Callable[[], T], *, timeout: float, thread: str) -> T:
    """`call()` on a short-lived thread named `thread` (its own loop, if it starts one), its result
    or its error. Past `timeout` it raises `TimeoutError` without waiting for the thread: a hung
    listing must not hold the caller."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread)
    try:
        return pool.submit(call).result(timeout=timeout)
    finally:
        pool.shutdown(wait=False)


def known_or_none(
    open_api: Callable[[], C],
    work: Callable[[C], Awaitable[T | None]],
    *,
    timeout: float,
    thread: str,
    logger: str,
    event: str,
) -> T | None:
    """`work(api)` as `run_closing` runs it, on a thread of its own (`on_own_thread`); None when it
    fails or times out, logged as `event` (info) on `logger`."""
    try:
        return on_own_thread(lambda: run_closing(open_api, work), timeout=timeout, thread=thread)
    except Exception as exc:  # noqa: BLE001 - unknown; whoever acts on it reports the real error
        import structlog  # here: a `sky` command that only builds configs never loads it (and rich)

        structlog.get_logger(logger).info(event, error=str(exc))
        return None


#: How long choosing between specs may wait for one cloud's listing.
PRICE_TIMEOUT = 15.0


def first_price(
    open_api: Callable[[], C],
    offers: Callable[[C], Awaitable[Sequence[Rental]]],
    *,
    cloud: str,
    logger: str,
    timeout: float = PRICE_TIMEOUT,
) -> float | None:
    """A config's `hourly_price`: the price of the first of `offers(api)` (the order a pool tries
    them in), None when there is none or it cannot be read (`known_or_none`, on a thread named
    `<cloud>-price`, logged as `skyward.<cloud>_price_unknown`)."""

    async def first(api: C) -> float | None:
        found = await offers(api)
        return found[0].price if found else None

    thread, event = f"{cloud}-price", f"skyward.{cloud}_price_unknown"
    return known_or_none(open_api, first, timeout=timeout, thread=thread, logger=logger, event=event)
