"""Which sources are asked for offers, when, and what each answered.

A source is asked only when its credentials are found, and only when its snapshot is older than
its `ttl` (or `force`): a cloud's price list is read about once a day, a marketplace about once an
hour, and a `sky offers` in between reads the file. The sources are asked at once, each on a
thread of its own, for at most `FETCH_TIMEOUT` seconds. A source that fails keeps its last
snapshot, which is then used and marked stale; one that never answered has none, and says why.
Nothing here raises for a provider's failure: it is reported beside the others' results.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs

from skyward.market.source import OfferSource
from skyward.market.store import Snapshot, Store, source_id

#: How long one source may take to list its offers before it counts as unreachable.
FETCH_TIMEOUT = 120.0

#: "fresh": fetched by this call; "cached": read from the file, younger than its ttl; "stale":
#: older than its ttl, and the provider could not be reached to refresh it; "failed": nothing to
#: show (the provider could not be reached and no snapshot exists); "skipped": no credentials.
State = Literal["fresh", "cached", "stale", "failed", "skipped"]


@attrs.frozen
class SourceStatus:
    """What one provider contributed to a catalog, and how old it is."""

    provider: str
    key: str
    state: State
    offers: int = 0
    fetched_at: float | None = None
    error: str | None = None

    @property
    def source(self) -> str:
        return source_id(self.provider, self.key)

    @property
    def usable(self) -> bool:
        """Whether its offers are in the catalog (fresh, cached or stale)."""
        return self.state in ("fresh", "cached", "stale")

    def age(self, now: float | None = None) -> float | None:
        return None if self.fetched_at is None else max((now or time.time()) - self.fetched_at, 0.0)

    def as_json(self, now: float | None = None) -> dict[str, Any]:
        age = self.age(now)
        return {
            "provider": self.provider, "key": self.key, "state": self.state, "offers": self.offers,
            "fetched_at": self.fetched_at, "age_seconds": None if age is None else int(age),
            "stale": self.state == "stale", "error": self.error,
        }


def _error_text(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _on_thread(work: Callable[[], Any], timeout: float) -> Any:
    """`work()` on a daemon thread, waited for `timeout` seconds: a hung provider must not hold
    `sky offers` (or the interpreter's exit) hostage. Raises what `work` raised, or TimeoutError."""
    answer: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            answer.put((True, work()))
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            answer.put((False, error))

    threading.Thread(target=run, name="skyward-offers", daemon=True).start()
    try:
        ok, value = answer.get(timeout=timeout)
    except queue.Empty:
        raise TimeoutError(f"no answer within {timeout:g} s") from None
    if not ok:
        raise value
    return value


def credentials_error(source: OfferSource) -> str | None:
    """None when the source has credentials to ask with, else why it is skipped."""
    try:
        status = source.credentials()
    except Exception as error:  # noqa: BLE001 - reported as the reason it is skipped
        return _error_text(error)
    return None if status.found else f"no credentials found ({status.where})"


def refresh_one(store: Store, source: OfferSource, force: bool = False, check_credentials: bool = True,
                timeout: float = FETCH_TIMEOUT) -> SourceStatus:
    """Bring one source's snapshot up to date if it is older than its ttl (or `force`)."""
    if check_credentials:
        reason = credentials_error(source)
        if reason is not None:
            return SourceStatus(source.name, source.key, "skipped", error=reason)
    before: Snapshot = store.snapshot(source.name, source.key)
    age = before.age()
    if not force and age is not None and age < source.ttl:
        return SourceStatus(source.name, source.key, "cached", before.offers, before.fetched_at)
    # The standard library's logger, not structlog: `sky.offers()` runs without a pool, where
    # unconfigured structlog would print on stdout; configured, Skyward's log file has these lines.
    log = logging.getLogger("skyward.market")
    try:
        offers = _on_thread(lambda: list(source.fetch()), timeout)
        now = time.time()
        count = store.replace(source.name, source.key, offers, now)
    except Exception as error:  # noqa: BLE001 - a provider's failure is reported, never raised
        text = _error_text(error)
        # info, not warning: the caller reports the failure beside the offers (the CLI on stderr).
        log.info("skyward.offers_refresh_failed provider=%s error=%s", source.name, text)
        store.failed(source.name, source.key, text)
        if before.fetched_at is None:
            return SourceStatus(source.name, source.key, "failed", error=text)
        return SourceStatus(source.name, source.key, "stale", before.offers, before.fetched_at, text)
    log.info("skyward.offers_refreshed provider=%s offers=%d", source.name, count)
    return SourceStatus(source.name, source.key, "fresh", count, now)


def _guarded(store: Store, source: OfferSource, force: bool) -> SourceStatus:
    """`refresh_one`, with a failure of the catalog file or of the source's `key` reported too."""
    try:
        return refresh_one(store, source, force)
    except Exception as error:  # noqa: BLE001 - reported beside the other providers' offers
        try:
            key = source.key
        except Exception:  # noqa: BLE001 - a key that cannot be worked out (a bad AWS profile)
            key = ""
        return SourceStatus(source.name, key, "failed", error=_error_text(error))


def refresh_all(store: Store, sources: Sequence[OfferSource], force: bool = False) -> list[SourceStatus]:
    """`refresh_one` for every source at once (each waits on its own provider), in their order."""
    if len(sources) <= 1:
        return [_guarded(store, s, force) for s in sources]
    results: list[SourceStatus | None] = [None] * len(sources)

    def one(index: int) -> None:
        results[index] = _guarded(store, sources[index], force)

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(sources))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [r for r in results if r is not None]
